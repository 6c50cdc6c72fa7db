// This Source Code Form is subject to the terms of the Mozilla Public
// License, v. 2.0. If a copy of the MPL was not distributed with this
// file, You can obtain one at https://mozilla.org/MPL/2.0/.

(() => {
    const darkThemes = ['ayu', 'navy', 'coal'];
    const lightThemes = ['light', 'rust'];

    const classList = document.getElementsByTagName('html')[0].classList;

    let lastThemeWasLight = true;
    for (const cssClass of classList) {
        if (darkThemes.includes(cssClass)) {
            lastThemeWasLight = false;
            break;
        }
    }

    const theme = lastThemeWasLight ? 'default' : 'dark';
    // Every diagram is scaled to fit the column, so every lifeline and
    // note is in sight; a link under it opens it at full size in a tab of
    // its own, where its labels read at their natural size.
    mermaid.initialize({
        startOnLoad: false,
        theme,
        sequence: { useMaxWidth: true },
        flowchart: { useMaxWidth: true },
    });
    const zh = document.documentElement.lang.startsWith('zh');
    const fullSize = (diagram) => {
        const svg = diagram.querySelector('svg');
        if (!svg || diagram.nextElementSibling?.classList.contains('diagram-full')) {
            return;
        }
        const source = new XMLSerializer().serializeToString(svg);
        const url = URL.createObjectURL(new Blob([source], { type: 'image/svg+xml' }));
        const link = document.createElement('a');
        link.href = url;
        link.target = '_blank';
        link.rel = 'noopener';
        link.textContent = zh ? '查看原尺寸图' : 'Open the diagram at full size';
        const p = document.createElement('p');
        p.className = 'diagram-full';
        p.appendChild(link);
        diagram.after(p);
    };
    const draw = () =>
        mermaid
            .run({ querySelector: '.mermaid' })
            .then(() => document.querySelectorAll('.mermaid').forEach(fullSize));
    if (document.readyState === 'loading') {
        document.addEventListener('DOMContentLoaded', draw);
    } else {
        draw();
    }

    // Simplest way to make mermaid re-render the diagrams in the new theme is via refreshing the page

    for (const darkTheme of darkThemes) {
        document.getElementById('mdbook-theme-' + darkTheme).addEventListener('click', () => {
            if (lastThemeWasLight) {
                window.location.reload();
            }
        });
    }

    for (const lightTheme of lightThemes) {
        document.getElementById('mdbook-theme-' + lightTheme).addEventListener('click', () => {
            if (!lastThemeWasLight) {
                window.location.reload();
            }
        });
    }
})();
