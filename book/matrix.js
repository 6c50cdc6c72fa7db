// The matrix in the book as on the CLI's pages (`matrix --html`): each cell
// coloured by its verdict. The whole table stays on screen: on a phone, or
// wherever the full labels would not fit the column, the stage headers
// shrink to their number and each verdict to a short code (the full verdict
// stays in the cell's tooltip, and a note above the table says the codes).
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
        'DUPLICATE': 'DP',
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
    const narrow = window.matchMedia('(max-width: 600px)');
    for (const table of tables) {
        const cells = [];
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
            ? '表格放不下时：表头只写阶段编号；OS = OVERSOLD，OL = OVERLAP，FD = FOREIGN-DELETE，DL = DEADLOCK，SB = SELF-BLOCKED，RF = REFUSED，DP = DUPLICATE，– = n/a。'
            : 'Where the table would not fit: stages by number; OS = OVERSOLD, OL = OVERLAP, FD = FOREIGN-DELETE, DL = DEADLOCK, SB = SELF-BLOCKED, RF = REFUSED, DP = DUPLICATE, – = n/a.';
        table.before(note);
        // Full labels if they fit the column, short codes if not.
        const apply = () => {
            for (const [cell, full] of cells) {
                cell.textContent = full;
            }
            const room = table.parentElement.clientWidth;
            const short = narrow.matches || table.scrollWidth > room + 1;
            if (short) {
                for (const [cell, , code] of cells) {
                    cell.textContent = code;
                }
            }
            note.style.display = short ? 'block' : 'none';
        };
        apply();
        narrow.addEventListener('change', apply);
        window.addEventListener('resize', apply);
    }
})();
