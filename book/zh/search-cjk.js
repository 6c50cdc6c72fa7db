// Search in Chinese. mdBook's index (elasticlunr) splits text into words at
// spaces and indexes Latin words only, so a Chinese word such as 看门狗 finds
// nothing although the chapters use it dozens of times. A query with Chinese
// in it is answered instead from the text the index stores with every
// section: each section that contains every term (Chinese or not) is a
// result, ranked by how often the terms occur, a title match counting more.
// Queries in Latin letters only keep the index's own search.
(() => {
    if (typeof elasticlunr === 'undefined') {
        return;
    }
    const CJK = /[\u3400-\u9fff\uf900-\ufaff]/;
    const original = elasticlunr.Index.prototype.search;
    const count = (text, term) => {
        let n = 0;
        for (let at = text.indexOf(term); at !== -1; at = text.indexOf(term, at + term.length)) {
            n++;
        }
        return n;
    };
    elasticlunr.Index.prototype.search = function (query, config) {
        if (typeof query !== 'string' || !CJK.test(query)) {
            return original.call(this, query, config);
        }
        const terms = query.toLowerCase().split(/\s+/).filter((t) => t.length > 0);
        const docs = this.documentStore.docs;
        const results = [];
        for (const ref of Object.keys(docs)) {
            const doc = docs[ref];
            const title = (doc.title || '').toLowerCase();
            const body = (doc.body || '').toLowerCase();
            let score = 0;
            let all = true;
            for (const term of terms) {
                const hits = 2 * count(title, term) + count(body, term);
                if (hits === 0) {
                    all = false;
                    break;
                }
                score += hits;
            }
            if (all) {
                results.push({ ref, score, doc });
            }
        }
        results.sort((a, b) => b.score - a.score);
        return results;
    };
})();
