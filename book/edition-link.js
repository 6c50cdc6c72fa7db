// The same page in the other edition, linked at the top of every page of both
// books (English: book/, Chinese: book/zh/). It is computed from where this
// page sits, so it works for the local builds (book/book/ and book/zh/book/,
// each with an html/ folder when other renderers run) and for any site that
// keeps that layout.
(() => {
    const zh = document.documentElement.lang.startsWith('zh');
    // path_to_root is mdBook's own ("" on a top-level page, "../" one level down).
    const root = new URL(path_to_root || './', window.location.href);
    let page = window.location.pathname.slice(root.pathname.length);
    if (page === '' || page.endsWith('/')) {
        page += 'index.html';
    }
    // The glossary of the CLI's English labels exists in Chinese only.
    if (zh && page === 'glossary.html') {
        page = 'index.html';
    }
    // book/book/[html/]  <->  book/zh/book/[html/]
    const renderer = root.pathname.endsWith('/html/') ? 'html/' : '';
    const up = renderer ? '../' : '';
    const other = zh ? `${up}../../book/${renderer}` : `${up}../zh/book/${renderer}`;
    const link = document.createElement('p');
    link.className = 'edition-link';
    link.style.textAlign = 'right';
    const a = document.createElement('a');
    a.href = new URL(other + page, root).href;
    a.textContent = zh ? 'English edition' : '中文版';
    a.lang = zh ? 'en' : 'zh-CN';
    link.appendChild(a);
    const main = document.querySelector('main');
    if (main) {
        main.insertBefore(link, main.firstChild);
    }
})();
