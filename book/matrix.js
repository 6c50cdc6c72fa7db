// The matrix in the book as on the CLI's pages (`matrix --html`): each cell
// coloured by its verdict. On a phone the whole table stays on screen: the
// stage headers shrink to their number and each verdict to a short code
// (the full verdict stays in the cell's tooltip and the legend below).
(() => {
    const tables = document.querySelectorAll('.matrix table');
    if (tables.length === 0) {
        return;
    }
    const zh = document.documentElement.lang.startsWith('zh');
    const SHORT = {
        'ok': 'ok',
        'OVERSOLD': 'OS',
        'OVERLAP': 'OL',
        'FOREIGN-DELETE': 'FD',
        'DEADLOCK': 'DL',
        'SELF-BLOCKED': 'SB',
        'REFUSED': 'RF',
        'n/a': '–',
        'ERROR': 'ERR',
    };
    const kind = (text) => {
        if (text === 'ok') return 'ok';
        if (text === 'n/a') return 'na';
        if (text === 'REFUSED') return 'refused';
        if (text === 'ERROR') return 'error';
        if (text === 'SELF-BLOCKED') return 'blocked';
        return 'failure';
    };
    const cells = [];
    for (const table of tables) {
        table.querySelectorAll('tbody td:not(:first-child)').forEach((td) => {
            const full = td.textContent.trim();
            td.classList.add('verdict-' + kind(full));
            td.title = full;
            const short = full.split(/\s+/).map((w) => SHORT[w] || w).join(' ');
            cells.push([td, full, short]);
        });
        table.querySelectorAll('thead th:not(:first-child)').forEach((th) => {
            const full = th.textContent.trim();
            cells.push([th, full, full.replace(/^stage/, '')]);
        });
        const note = document.createElement('p');
        note.className = 'matrix-phone-note';
        note.textContent = zh
            ? '窄屏上：表头只写阶段编号；OS = OVERSOLD，OL = OVERLAP，FD = FOREIGN-DELETE，DL = DEADLOCK，SB = SELF-BLOCKED，RF = REFUSED，– = n/a。'
            : 'On a narrow screen: stages by number; OS = OVERSOLD, OL = OVERLAP, FD = FOREIGN-DELETE, DL = DEADLOCK, SB = SELF-BLOCKED, RF = REFUSED, – = n/a.';
        table.before(note);
    }
    const narrow = window.matchMedia('(max-width: 600px)');
    const apply = () => {
        for (const [cell, full, short] of cells) {
            cell.textContent = narrow.matches ? short : full;
        }
    };
    apply();
    narrow.addEventListener('change', apply);
})();
