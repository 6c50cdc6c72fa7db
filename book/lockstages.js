// How the course's pictures, code and tables read, on a desk and on a phone.
// The book loads this file (both editions carry the same copy), and the
// CLI's pages (`run --html`, `matrix --html`) embed it. `.ci/browser-check.py`
// holds the rules it keeps:
//
// - diagrams: never shrunk below a readable size. A diagram is scaled to
//   its column while its text stays at least MIN_TEXT px; one that cannot
//   fit at that size is drawn at it and scrolls sideways in its own box;
//   one taller than SCREENS screens is folded (a <details> that says what
//   it holds). Each gets a link that opens it at its natural size.
// - timelines: one taller than SCREENS screens at the reader's width folds
//   its longest runs of lines that the prose around it does not cite (by
//   their times, `T+84ms`) until it is not; on a desk nothing folds.
// - code: a line too long for the column wraps under its own start, two
//   characters in (a hanging indent), not back at column 0 where it would
//   read as a line of its own. Copying a block copies its text unchanged.
// - tables: on a narrow screen, the columns a chapter's text cites (named
//   in an enclosing `data-cites="a|b"`, each a header or the start of one
//   up to a space, comma or parenthesis) come first, after the row's name
//   (the first column, or the one `data-row` names); the rest follow, a
//   sideways scroll away (the stylesheet keeps the first column on screen).

(() => {
    const MIN_TEXT = 11; // px as drawn; the check's floor is 10
    const SCREENS = 3;
    const NARROW = '(max-width: 600px)';
    const zh = document.documentElement.lang.startsWith('zh');

    const words = zh
        ? {
              full: '查看原尺寸图',
              wide: '此图比栏宽：左右滑动查看，或用图下的链接查看原尺寸图',
              fold: (lifelines, screens, wide) =>
                  `时序图（${lifelines} 条生命线，按可读的大小约 ${screens} 屏高）：点开在此阅读` +
                  (wide ? '（可左右滚动）' : '') +
                  '，或用图下的链接查看原尺寸图',
          }
        : {
              full: 'Open the diagram at full size',
              wide: 'Wider than the column: scroll it sideways, or open it at full size with the link under it',
              fold: (lifelines, screens, wide) =>
                  `The sequence diagram (${lifelines} lifelines, about ${screens} screens tall ` +
                  `at a readable size): open it here` +
                  (wide ? ' (it scrolls sideways)' : '') +
                  ', or at full size with the link under it',
          };

    // ---- diagrams ---------------------------------------------------------

    // The diagram's own size and its smallest text, in its units.
    const natural = (svg) => {
        const box = svg.viewBox.baseVal;
        let font = Infinity;
        for (const t of svg.querySelectorAll('text')) {
            if (t.textContent.trim()) {
                font = Math.min(font, parseFloat(getComputedStyle(t).fontSize));
            }
        }
        return { width: box.width, height: box.height, font: Number.isFinite(font) ? font : 16 };
    };

    // A link that opens the diagram alone, at its natural size.
    const fullSizeLink = (svg, size) => {
        const copy = svg.cloneNode(true);
        copy.setAttribute('width', String(size.width));
        copy.setAttribute('height', String(size.height));
        copy.style.removeProperty('width');
        copy.style.removeProperty('height');
        copy.style.removeProperty('max-width');
        const source = new XMLSerializer().serializeToString(copy);
        const link = document.createElement('a');
        link.href = URL.createObjectURL(new Blob([source], { type: 'image/svg+xml' }));
        link.target = '_blank';
        link.rel = 'noopener';
        link.textContent = words.full;
        return link;
    };

    const layOutDiagram = (el) => {
        const svg = el.querySelector('svg');
        if (!svg || !svg.viewBox.baseVal || !svg.viewBox.baseVal.width) {
            return;
        }
        if (!el.lockstages) {
            const size = natural(svg);
            // The block the diagram stands in, before any fold of ours.
            el.lockstages = { size, holder: el.parentElement };
            const p = document.createElement('p');
            p.className = 'diagram-full';
            p.appendChild(fullSizeLink(svg, size));
            el.after(p);
        }
        const { size, holder } = el.lockstages;
        const link = el.nextElementSibling;
        const style = getComputedStyle(el);
        const room =
            holder.clientWidth -
            parseFloat(style.paddingLeft) -
            parseFloat(style.paddingRight) -
            parseFloat(style.borderLeftWidth) -
            parseFloat(style.borderRightWidth);
        const fit = Math.min(1, room / size.width);
        const readable = MIN_TEXT / size.font;
        const wide = fit < readable;
        const scale = wide ? readable : fit;
        const width = size.width * scale;
        const height = size.height * scale;
        svg.setAttribute('width', String(width));
        svg.setAttribute('height', String(height));
        svg.style.width = `${width}px`;
        svg.style.height = `${height}px`;
        svg.style.maxWidth = 'none';
        el.classList.toggle('diagram-wide', wide);
        // Folded when taller than a few screens (margin for the box's own
        // padding and the link under it).
        const screens = height / window.innerHeight;
        const tall = height + 60 > SCREENS * window.innerHeight;
        let fold = el.parentElement.matches('details.diagram-fold') ? el.parentElement : null;
        if (tall && !fold) {
            fold = document.createElement('details');
            fold.className = 'diagram-fold';
            const summary = document.createElement('summary');
            fold.appendChild(summary);
            el.before(fold);
            fold.append(el, link);
        } else if (!tall && fold) {
            fold.before(el, link);
            fold.remove();
            fold = null;
        }
        if (fold) {
            const lifelines = svg.querySelectorAll('line[class*="actor-line"]').length;
            fold.firstElementChild.textContent = words.fold(lifelines, Math.ceil(screens), wide);
        }
        // A diagram that scrolls sideways in the page says so above it (a
        // folded one says so in its fold's line).
        let hint = el.lockstages.hint;
        if (wide && !fold) {
            if (!hint) {
                hint = el.lockstages.hint = document.createElement('p');
                hint.className = 'diagram-hint';
                hint.textContent = words.wide;
            }
            el.before(hint);
        } else if (hint) {
            hint.remove();
        }
    };

    const layOutDiagrams = () => {
        document.querySelectorAll('.mermaid').forEach(layOutDiagram);
        document.documentElement.dataset.diagrams = 'laid-out';
    };

    let resizing = null;
    let lastWidth = window.innerWidth;
    window.addEventListener('resize', () => {
        if (window.innerWidth === lastWidth) {
            return;
        }
        lastWidth = window.innerWidth;
        clearTimeout(resizing);
        resizing = setTimeout(() => {
            mendBlankFirstRows();
            foldTimelines();
            layOutDiagrams();
        }, 150);
    });

    // ---- timelines ---------------------------------------------------------

    // The times (`T+84ms`) the prose around a block cites: the paragraphs
    // before it, back to the previous heading, timeline or diagram, and
    // after it, up to the next one.
    const TIME = /T\+\d+ms/g;
    const isStop = (el) =>
        /^H[1-6]$/.test(el.tagName) ||
        el.matches('pre.timeline, .mermaid') ||
        !!el.querySelector('pre.timeline, .mermaid');
    const citedTimes = (block) => {
        const times = new Set();
        for (const step of ['previousElementSibling', 'nextElementSibling']) {
            for (let el = block[step]; el && !isStop(el); el = el[step]) {
                for (const t of el.textContent.match(TIME) || []) times.add(t);
            }
        }
        return times;
    };

    const unfoldTimeline = (pre) => {
        for (const fold of pre.querySelectorAll(':scope > details.timeline-fold')) {
            fold.querySelector(':scope > summary').remove();
            fold.before(...fold.childNodes);
            fold.remove();
        }
    };

    // `T+87ms   client-B  [node3] SET …`: a command (or a script's line);
    // what is not one is the story the history tells (`acquired the lock`,
    // `KILLED`, `verdict: ok`).
    const COMMAND = /^T\+\d+ms\s+\S+\s+\[/;

    const foldLines = (lines) => {
        const fold = document.createElement('details');
        fold.className = 'timeline-fold';
        const summary = document.createElement('summary');
        const times = lines.map((l) => (l.textContent.match(/^T\+\d+ms/) || [''])[0]).filter(Boolean);
        const [first, last] = [times[0] || '', times[times.length - 1] || ''];
        const when = zh
            ? first === last ? `${first} 时` : `${first} 至 ${last}`
            : first === last ? `at ${first}` : `${first} to ${last}`;
        const commands = lines.every((l) => COMMAND.test(l.textContent));
        summary.textContent = zh
            ? `此处折叠了 ${lines.length} ${commands ? '条命令' : '行'}（${when}），点开查看`
            : `${lines.length} ${commands ? 'commands' : 'lines'} folded here, ${when}: open them`;
        lines[0].before(fold);
        fold.append(summary, '\n');
        for (const line of lines) {
            // The newline after each line goes with it: the block's text
            // keeps one line per line.
            const after = line.nextSibling;
            fold.append(line);
            if (after && after.nodeType === 3) fold.append(after);
        }
    };

    // A timeline taller than SCREENS screens at this width folds runs of
    // lines that nothing around it cites, the tallest first, until it stands
    // within them: first runs of commands, so that the story (`acquired the
    // lock`, `KILLED`, a Sentinel's event) reads on; if that is not enough,
    // runs of anything but the harness's own lines. What always stays: its
    // first lines (the command that reruns it), its last (the verdict), the
    // harness's lines (the faults it plays, what it finds), and every line
    // at a time the prose quotes.
    const foldTimeline = (pre) => {
        unfoldTimeline(pre);
        const limit = SCREENS * window.innerHeight * 0.95;
        if (pre.getBoundingClientRect().height <= limit) {
            return;
        }
        const cited = citedTimes(pre);
        const lines = [...pre.querySelectorAll(':scope > .line')];
        // 0: stays; 1: the story; 2: a command.
        const tier = lines.map((line, i) => {
            const text = line.textContent;
            if (
                i < 3 ||
                i >= lines.length - 2 ||
                /^T\+\d+ms\s+harness\s/.test(text) ||
                (text.match(TIME) || []).some((t) => cited.has(t))
            ) {
                return 0;
            }
            return COMMAND.test(text) ? 2 : 1;
        });
        const fold = (lowest) => {
            const runs = [];
            let run = [];
            lines.forEach((line, i) => {
                if (tier[i] < lowest) {
                    if (run.length) runs.push(run);
                    run = [];
                } else {
                    run.push(line);
                }
            });
            if (run.length) runs.push(run);
            const height = (r) => r.reduce((sum, line) => sum + line.getBoundingClientRect().height, 0);
            const measured = runs.map((r) => [height(r), r]).sort((a, b) => b[0] - a[0]);
            // Runs of two or more first; single lines only if that is not enough.
            for (const single of [false, true]) {
                for (const [, r] of measured) {
                    if (pre.getBoundingClientRect().height <= limit) {
                        return true;
                    }
                    if ((r.length === 1) === single) {
                        foldLines(r);
                    }
                }
            }
            return pre.getBoundingClientRect().height <= limit;
        };
        if (!fold(2)) {
            unfoldTimeline(pre);
            fold(1);
        }
    };

    const foldTimelines = () => {
        document.querySelectorAll('pre.timeline').forEach(foldTimeline);
    };

    // ---- code -------------------------------------------------------------

    // Each source line its own box, indented past its start when it wraps;
    // the newlines stay in the text between the boxes, so the block's text
    // (what the copy button copies) is what it was.
    const hangCodeLines = (code) => {
        if (code.dataset.lines || code.closest('.mermaid')) {
            return;
        }
        const pieces = [];
        let length = 0;
        const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            pieces.push([walker.currentNode, length]);
            length += walker.currentNode.length;
        }
        if (!pieces.length) {
            return;
        }
        const at = (offset) => {
            let lo = 0;
            let hi = pieces.length - 1;
            while (lo < hi) {
                const mid = (lo + hi + 1) >> 1;
                if (pieces[mid][1] <= offset) lo = mid;
                else hi = mid - 1;
            }
            const [node, from] = pieces[lo];
            return [node, Math.min(offset - from, node.length)];
        };
        const text = pieces.map(([node]) => node.data).join('');
        const lines = text.split('\n');
        const trailing = lines.length > 1 && lines[lines.length - 1] === '';
        if (trailing) {
            lines.pop();
        }
        const out = document.createDocumentFragment();
        let offset = 0;
        lines.forEach((line, i) => {
            const range = document.createRange();
            range.setStart(...at(offset));
            range.setEnd(...at(offset + line.length));
            const box = document.createElement('span');
            box.className = 'code-line';
            const indent = line.match(/^[ \t]*/)[0].replace(/\t/g, '    ').length;
            box.style.setProperty('--indent', String(indent));
            box.appendChild(range.cloneContents());
            // A line that is all hidden (mdBook's `# ` lines) hides whole.
            const shown = [...box.childNodes].some(
                (n) => !(n.nodeType === 1 && n.classList.contains('boring')) && n.textContent !== '',
            );
            if (!shown && box.querySelector('.boring')) {
                box.classList.add('boring');
            }
            out.appendChild(box);
            if (i < lines.length - 1 || trailing) {
                // A hidden line takes its newline with it.
                (box.classList.contains('boring') ? box : out).appendChild(document.createTextNode('\n'));
            }
            offset += line.length + 1;
        });
        code.replaceChildren(out);
        code.dataset.lines = 'hanging';
    };

    // A line whose first word cannot follow its indentation on the row
    // would leave that row blank, the browser breaking after the spaces;
    // such a line breaks anywhere instead, filling its first row.
    const mendBlankFirstRows = () => {
        for (const box of document.querySelectorAll('pre > code .code-line')) {
            box.classList.remove('break-anywhere');
            const rows = box.getClientRects();
            if (!rows.length || rows[0].height < 2 * parseFloat(getComputedStyle(box).lineHeight || '0')) {
                continue;
            }
            const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
            let node = null;
            let at = -1;
            while (walker.nextNode()) {
                at = walker.currentNode.data.search(/\S/);
                if (at >= 0) {
                    node = walker.currentNode;
                    break;
                }
            }
            if (!node) {
                continue;
            }
            const range = document.createRange();
            range.setStart(node, at);
            range.setEnd(node, at + 1);
            const first = range.getBoundingClientRect();
            if (first.top > rows[0].top + first.height / 2) {
                box.classList.add('break-anywhere');
            }
        }
    };

    // ---- tables -----------------------------------------------------------

    // On a narrow screen, the cited columns first (after the row's name);
    // on a wide one, the table's own order.
    const orderColumns = () => {
        const narrow = window.matchMedia(NARROW).matches;
        for (const holder of document.querySelectorAll('[data-cites]')) {
            const names = holder.dataset.cites
                .split('|')
                .map((n) => n.trim())
                .filter(Boolean);
            for (const table of holder.querySelectorAll('table')) {
                if (!table.rows.length) {
                    continue;
                }
                const headers = [...table.rows[0].cells];
                if (!table.dataset.order) {
                    headers.forEach((cell, i) => (cell.dataset.column = String(i)));
                    for (const row of [...table.rows].slice(1)) {
                        [...row.cells].forEach((cell, i) => (cell.dataset.column = String(i)));
                    }
                }
                const named = (i, n) => {
                    const header = headers.find((c) => c.dataset.column === String(i));
                    const text = header ? header.textContent.trim() : '';
                    return text === n || (text.startsWith(n) && /^[ ,(]/.test(text.slice(n.length)));
                };
                // The row's name first: the table's first column, or the
                // one `data-row` names.
                const row = holder.dataset.row;
                const first = row && headers.some((c) => named(Number(c.dataset.column), row))
                    ? headers.map((c) => Number(c.dataset.column)).find((i) => named(i, row))
                    : 0;
                const rank = (i) => {
                    if (!narrow) return [0, i];
                    if (i === first) return [0, 0];
                    const cited = names.findIndex((n) => named(i, n));
                    return cited >= 0 ? [1, cited] : [2, i];
                };
                const order = headers
                    .map((c) => Number(c.dataset.column))
                    .sort((a, b) => {
                        const [x, y] = [rank(a), rank(b)];
                        return x[0] - y[0] || x[1] - y[1];
                    });
                if (table.dataset.order === order.join(',')) {
                    continue;
                }
                for (const row of table.rows) {
                    const cells = new Map([...row.cells].map((c) => [Number(c.dataset.column), c]));
                    for (const i of order) {
                        if (cells.has(i)) row.appendChild(cells.get(i));
                    }
                }
                table.dataset.order = order.join(',');
            }
        }
    };

    const start = () => {
        document.querySelectorAll('pre > code').forEach(hangCodeLines);
        mendBlankFirstRows();
        foldTimelines();
        // Once the page's fonts are in, lines wrap as they will stay.
        document.fonts?.ready.then(() => {
            mendBlankFirstRows();
            foldTimelines();
        });
        orderColumns();
        window.matchMedia(NARROW).addEventListener('change', orderColumns);
    };
    if (document.readyState === 'loading') {
        document.addEventListener('DOMContentLoaded', start);
    } else {
        start();
    }

    // On paper nothing scrolls and nothing opens: every fold is opened and
    // every diagram fits the page's width while printing, as it was after.
    window.addEventListener('beforeprint', () => {
        for (const fold of document.querySelectorAll('details.diagram-fold, details.timeline-fold')) {
            if (!fold.open) {
                fold.open = true;
                fold.dataset.printed = 'opened';
            }
        }
        for (const svg of document.querySelectorAll('.mermaid svg')) {
            svg.style.width = '100%';
            svg.style.height = 'auto';
            svg.removeAttribute('height');
        }
    });
    window.addEventListener('afterprint', () => {
        for (const fold of document.querySelectorAll('details[data-printed]')) {
            fold.open = false;
            delete fold.dataset.printed;
        }
        layOutDiagrams();
    });

    window.lockstagesDiagrams = { layOut: layOutDiagrams };
})();
