#!/usr/bin/env python3
"""Opens pages in headless Chromium, as a reader at 1280 px (and, with
--width 390, on a phone) would, and checks what the course promises about
them:

- every Mermaid diagram rendered as an SVG, with a lifeline for every client
  its source declares;
- nothing is wider than its column: no code block or timeline overflows or
  scrolls sideways, and the page itself does not scroll sideways;
- no diagram is shrunk until it cannot be read: its text, as drawn, is at
  least 10 px; a diagram that is wider than its column at that size scrolls
  sideways in a box of its own (or is folded); each has a link that opens it
  at full size;
- no timeline, diagram or program output stands more than 3 screens tall
  (2,700 px at 1280 x 900, 2,532 px at 390 x 844) unless it is folded (a
  closed <details>); folded content is checked as it reads once opened; a
  timeline folded in part keeps in sight every line at a time (`T+84ms`)
  the prose around it quotes;
- a code line that wraps goes on to the right of where it starts (a
  hanging indent), never back at its own indentation or left of it, where
  it would read as a line of code of its own;
- a table is whole in its column, or scrolls sideways in a box of its own
  with its first column (the row's name) staying on screen; its text is at
  least 10 px; and the columns its text cites (named in an enclosing
  `data-cites="a|b"`: a header, or its start up to a space, comma or
  parenthesis) are shown: on screen, or, in a table that scrolls, first,
  before any column the text does not cite; a name no header has fails;
- with --table, the page's table has the rows and columns it should, and
  shows them all (no scrollbar: the matrix stays whole, at 390 px too);
- with --book, every chapter of a built mdBook (its html/ folder or the book
  folder itself) is checked; with --search TERM, the book's search box finds
  at least one section for each TERM (a Chinese word as well as a Latin one).

It drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe),
so it needs nothing but Python's standard library and Debian's `chromium`.
Each page's screenshot is written into --shots.

    browser-check.py --shots target/screenshots [--table RxC] [--diagram] FILE...
    browser-check.py --shots target/screenshots --book book/zh/book/html --width 1280 --width 390 --search 看门狗
    browser-check.py --shots target/screenshots/phone --width 390 --table 20x12 book/book/html/matrix.html
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WIDTH = 1280

# A screen: 1280 x 900 on a desk, 390 x 844 on a phone (an iPhone 12 to 14).
PHONE = 600


def screen_height(width):
    return 844 if width < PHONE else 900


# What a reader can read: the smallest text a diagram or a table may show
# (px, as drawn on the page), and how many screens tall a timeline or a
# diagram may stand before it must be folded.
MIN_TEXT = 10
MAX_SCREENS = 3

# Pages of a built book that are not chapters.
NOT_CHAPTERS = {'print.html', 'toc.html', '404.html'}

# Kept before Mermaid replaces its source with the SVG.
KEEP_SOURCES = """
document.addEventListener('DOMContentLoaded', () => {
  for (const el of document.querySelectorAll('.mermaid')) {
    el.dataset.source = el.textContent;
  }
});
"""

RENDERED = """
(() => {
  const all = [...document.querySelectorAll('.mermaid')];
  return all.every(el => el.querySelector('svg') || el.dataset.processed === 'true');
})()
"""

# The checks, as a function of the page's viewport: `limits` gives the
# smallest text a diagram or table may show, the tallest a timeline or
# diagram may stand unfolded, and whether the page's table must be whole.
CHECKS = """
((limits) => {
  const problems = [];
  const diagrams = [];
  const MIN_TEXT = limits.minText;
  const MAX_HEIGHT = limits.screens * window.innerHeight;
  const px = n => Math.round(n * 10) / 10;
  const column = document.querySelector('main') || document.body;
  const columnBox = column.getBoundingClientRect();
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const start = el => (el.textContent || '').trim().split('\\n')[0].slice(0, 60);

  // Everything folded is checked as it reads once opened (its text, its
  // wrapping, its width); only the height rule lets a fold off.
  const closed = [...document.querySelectorAll('details:not([open])')];
  closed.forEach(d => { d.open = true; });

  for (const el of document.querySelectorAll('.mermaid')) {
    const svg = el.querySelector('svg');
    const source = el.dataset.source || '';
    if (!svg) { problems.push('a diagram did not render: ' + source.slice(0, 80)); continue; }
    const declared = [...source.matchAll(/participant \\S+ as (client-\\S+)/g)].map(m => m[1]);
    const actors = new Set([...svg.querySelectorAll('text.actor')].map(t => t.textContent.trim()));
    const lifelines = svg.querySelectorAll('line[class*="actor-line"]').length;
    for (const client of declared) {
      if (!actors.has(client)) problems.push('no lifeline for ' + client + ' in a diagram');
    }
    if (declared.length && lifelines < declared.length) {
      problems.push(`a diagram has ${lifelines} lifelines for ${declared.length} clients`);
    }
    const box = svg.getBoundingClientRect();
    const room = el.getBoundingClientRect();
    // Wider than its column only inside a box that scrolls sideways, and
    // that box itself within the column.
    if (box.width > room.width + 1 && !scrolls(el)) {
      problems.push(`a diagram is wider than its column (${Math.round(box.width)} > ${Math.round(room.width)} px)`);
    }
    if (room.right > columnBox.right + 1) {
      problems.push(`a diagram's box overflows its column (${Math.round(room.right)} > ${Math.round(columnBox.right)} px)`);
    }
    // The text as shown: its font size times the scale the SVG is drawn at.
    let smallest = Infinity;
    let label = '';
    for (const t of svg.querySelectorAll('text, foreignObject')) {
      const words = t.textContent.trim();
      const m = t.getScreenCTM();
      if (!words || !m) continue;
      const styled = t.tagName === 'foreignObject' ? (t.querySelector('*') || t) : t;
      const size = parseFloat(getComputedStyle(styled).fontSize) * Math.hypot(m.a, m.b);
      if (size < smallest) { smallest = size; label = words.slice(0, 50); }
    }
    if (smallest < MIN_TEXT) {
      problems.push(`a diagram's text is shown at ${px(smallest)} px, under ${MIN_TEXT} (${Math.round(box.width)} x ${Math.round(box.height)} px, e.g. "${label}")`);
    }
    const next = el.nextElementSibling;
    // In the book (which has a search toggle), mermaid-init.js adds the link.
    if (document.getElementById('mdbook-search-toggle') &&
        !(next && next.classList.contains('diagram-full') && next.querySelector('a[href]'))) {
      problems.push('a diagram has no link to open it at full size');
    }
    diagrams.push({clients: declared.length, lifelines, width: Math.round(box.width),
                   height: Math.round(box.height), text: px(smallest)});
  }

  const right = columnBox.right + 1;
  const blocks = [...document.querySelectorAll('pre:not(.mermaid)')];
  for (const el of blocks) {
    const what = el.classList.contains('timeline') ? 'a timeline' : 'a code block';
    if (el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${what} scrolls sideways (${el.scrollWidth} > ${el.clientWidth} px): ${start(el)}`);
    }
    if (el.getBoundingClientRect().right > right) {
      problems.push(`${what} overflows its column: ${start(el)}`);
    }
  }

  // A wrapped line goes on to the right of where it starts (a hanging
  // indent), never back at its own indentation or left of it, where it
  // would read as a line of code of its own.
  let restarts = [];
  for (const code of document.querySelectorAll('pre > code, pre.timeline')) {
    if (code.closest('.mermaid')) continue;
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const pieces = [];
    let length = 0;
    while (walker.nextNode()) { pieces.push([walker.currentNode, length]); length += walker.currentNode.length; }
    const at = offset => {
      let lo = 0, hi = pieces.length - 1;
      while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (pieces[mid][1] <= offset) lo = mid; else hi = mid - 1; }
      const [node, from] = pieces[lo];
      return [node, Math.min(offset - from, node.length)];
    };
    const text = pieces.map(p => p[0].data).join('');
    let offset = 0;
    for (const line of text.split('\\n')) {
      const first = line.search(/\\S/);
      if (first >= 0) {
        const range = document.createRange();
        range.setStart(...at(offset + first));
        range.setEnd(...at(offset + first + 1));
        const head = range.getClientRects()[0];
        range.setEnd(...at(offset + line.length));
        if (head) {
          for (const r of range.getClientRects()) {
            if (r.width > 0 && r.top > head.top + head.height / 2 && r.left < head.left + 1) {
              restarts.push(`${Math.round(r.left - head.left)} px from its start: ${line.trim().slice(0, 60)}`);
              break;
            }
          }
        }
      }
      offset += line.length + 1;
    }
  }
  if (restarts.length) {
    problems.push(`${restarts.length} wrapped line(s) go on at or left of where they start, like a line of their own (no hanging indent); the first: ${restarts[0]}`);
  }

  // Tables: whole in their column, or scrolling sideways in a box of their
  // own with the first column (the row's name) staying on screen; text at
  // least MIN_TEXT; and the columns the text cites (the names in an
  // enclosing data-cites, "a|b|c") shown: on screen, or first in a table
  // that scrolls.
  const tables = [...document.querySelectorAll('table')];
  const cited = new Map();
  for (const table of tables) {
    const wrapper = table.parentElement;
    const wrapBox = wrapper.getBoundingClientRect();
    const first = start(table);
    let small = Infinity;
    for (const cell of table.querySelectorAll('th, td')) {
      if (cell.textContent.trim() && cell.getClientRects().length) {
        small = Math.min(small, parseFloat(getComputedStyle(cell).fontSize));
      }
    }
    if (small < MIN_TEXT) {
      problems.push(`a table's text is ${px(small)} px, under ${MIN_TEXT}: ${first}`);
    }
    if (wrapBox.right > right || table.getBoundingClientRect().left < columnBox.left - 1) {
      problems.push(`a table overflows its column: ${first}`);
    }
    const hidden = wrapper.scrollWidth > wrapper.clientWidth + 1;
    if (hidden && (limits.whole || !scrolls(wrapper))) {
      problems.push(`a table hides columns behind a scrollbar (${wrapper.scrollWidth} > ${wrapper.clientWidth} px): ${first}`);
    } else if (hidden) {
      const before = wrapper.scrollLeft;
      wrapper.scrollLeft = wrapper.scrollWidth;
      const stays = [...table.rows].every(row => !row.cells.length ||
        Math.abs(row.cells[0].getBoundingClientRect().left - wrapBox.left) < 2);
      wrapper.scrollLeft = before;
      if (!stays) {
        problems.push(`a table scrolls sideways (${wrapper.scrollWidth} > ${wrapper.clientWidth} px) and its first column scrolls away with it: ${first}`);
      }
    }
    const holder = table.closest('[data-cites]');
    if (holder && table.rows.length) {
      const names = holder.dataset.cites.split('|').map(n => n.trim()).filter(Boolean);
      if (!cited.has(holder)) cited.set(holder, new Map(names.map(n => [n, 0])));
      const found = cited.get(holder);
      // In the order the reader meets them, left to right.
      const headers = [...table.rows[0].cells]
        .map(cell => ({cell, text: cell.textContent.trim(), box: cell.getBoundingClientRect()}))
        .sort((a, b) => a.box.left - b.box.left);
      let uncited = null;
      headers.forEach(({cell, text, box}, i) => {
        const name = names.find(n => text === n || (text.startsWith(n) && /^[ ,(]/.test(text.slice(n.length))));
        if (!name) {
          if (i > 0 && !uncited) uncited = text;
          return;
        }
        found.set(name, found.get(name) + 1);
        if (!cell.getClientRects().length) {
          problems.push(`the cited column "${name}" is hidden: ${first}`);
        } else if (!hidden && (box.left < wrapBox.left - 1 || box.right > wrapBox.right + 1)) {
          problems.push(`the cited column "${name}" is not on screen: ${first}`);
        } else if (hidden && uncited) {
          // A table that scrolls shows the cited columns first, after the
          // row's name: none stands behind a column the text does not cite.
          problems.push(`the cited column "${name}" comes after "${uncited}", which the text does not cite, in a table that scrolls sideways: ${first}`);
        }
      });
    }
  }
  for (const found of cited.values()) {
    for (const [name, count] of found) {
      if (!count) problems.push(`data-cites names a column no table has: "${name}"`);
    }
  }

  closed.forEach(d => { d.open = false; });

  // Timelines and diagrams as they stand on the page: at most a few
  // screens each, unless folded (a closed <details>) for the reader to open.
  const tall = [...document.querySelectorAll('.mermaid, pre.timeline, pre:has(> code.language-text)')];
  for (const el of tall) {
    if (el.closest('details:not([open])')) continue;
    const height = el.getBoundingClientRect().height;
    if (height > MAX_HEIGHT) {
      const what = el.classList.contains('mermaid') ? 'a diagram' :
        (el.classList.contains('timeline') ? 'a timeline' : 'a text block');
      problems.push(`${what} is ${Math.round(height)} px tall, ${px(height / window.innerHeight)} screens, more than ${limits.screens} (${MAX_HEIGHT} px) unfolded: ${start(el)}`);
    }
  }

  // A timeline folded to fit keeps in sight every line at a time the prose
  // around it quotes (`T+84ms`): the paragraphs before it back to the
  // previous heading, timeline or diagram, and after it up to the next.
  const TIME = /T\+\d+ms/g;
  const stop = el => /^H[1-6]$/.test(el.tagName) || el.matches('pre.timeline, .mermaid') ||
    !!el.querySelector('pre.timeline, .mermaid');
  for (const pre of document.querySelectorAll('pre.timeline')) {
    const folded = [...pre.querySelectorAll('details:not([open]) .line')];
    if (!folded.length) continue;
    const cited = new Set();
    for (const step of ['previousElementSibling', 'nextElementSibling']) {
      for (let el = pre[step]; el && !stop(el); el = el[step]) {
        for (const t of el.textContent.match(TIME) || []) cited.add(t);
      }
    }
    const hidden = folded.flatMap(line => line.textContent.match(TIME) || []).filter(t => cited.has(t));
    if (hidden.length) {
      problems.push(`a timeline folds away a line at a time its prose cites (${[...new Set(hidden)].join(', ')}): ${start(pre)}`);
    }
  }

  if (document.documentElement.scrollWidth > window.innerWidth) {
    problems.push(`the page scrolls sideways (${document.documentElement.scrollWidth} px)`);
  }
  const table = document.querySelector('table');
  const shape = table ? {rows: table.rows.length, columns: table.rows[0].cells.length} : null;
  return JSON.stringify({problems, diagrams, blocks: blocks.length + tables.length, table: shape});
})
"""

# Opens the search box and types `term`; the number of results, once the
# index has loaded and answered (-1 while it has not).
SEARCH = """
((term) => {
  const bar = document.getElementById('mdbook-searchbar');
  if (!bar) return -2;
  const wrapper = document.getElementById('mdbook-search-wrapper');
  if (wrapper && wrapper.classList.contains('hidden')) {
    document.getElementById('mdbook-search-toggle').click();
  }
  if (bar.value !== term) {
    bar.value = term;
  }
  bar.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true}));
  const header = document.getElementById('mdbook-searchresults-header');
  if (!header || !header.textContent.includes(term)) return -1;
  return document.querySelectorAll('#mdbook-searchresults > li').length;
})
"""


class Browser:
    """Chromium, spoken to over fds 3 and 4."""

    def __init__(self):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        # Out of the way of 3 and 4, which the child gets them as.
        to_browser_r = os.dup2(to_browser_r, 100, inheritable=True) or 100
        from_browser_w = os.dup2(from_browser_w, 101, inheritable=True) or 101

        def fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        binary = next((b for b in ('chromium', 'chromium-browser', 'google-chrome')
                       if subprocess.run(['sh', '-c', f'command -v {b}'],
                                         capture_output=True).returncode == 0), None)
        if binary is None:
            sys.exit('no chromium on PATH (Debian: apt-get install chromium)')
        # A profile of its own, so that several checks can run at once
        # (two Chromiums on one profile hand their pages to one another).
        self.profile = tempfile.mkdtemp(prefix='browser-check-')
        self.process = subprocess.Popen(
            [binary, '--headless', '--no-sandbox', '--disable-gpu',
             f'--user-data-dir={self.profile}',
             '--remote-debugging-pipe', '--allow-file-access-from-files',
             f'--window-size={WIDTH},900', 'about:blank'],
            pass_fds=(3, 4, to_browser_r, from_browser_w), preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b''
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        message = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session:
            message['sessionId'] = session
        os.write(self.to_browser, json.dumps(message).encode() + b'\0')
        deadline = time.time() + timeout
        while time.time() < deadline:
            reply = self.read()
            if reply.get('id') == self.next_id:
                if 'error' in reply:
                    raise RuntimeError(f'{method}: {reply["error"]}')
                return reply.get('result', {})
            self.events.append(reply)
        raise TimeoutError(method)

    def read(self):
        while b'\0' not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError('chromium went away')
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b'\0', 1)
        return json.loads(message)

    def wait_event(self, method, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, event in enumerate(self.events):
                if event.get('method') == method:
                    return self.events.pop(i)
            self.events.append(self.read())
        raise TimeoutError(method)

    def close(self):
        try:
            self.send('Browser.close', timeout=10)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def search(browser, path, terms):
    """Each term's number of search results on the page at `path`."""
    target = browser.send('Target.createTarget', {'url': 'about:blank'})['targetId']
    session = browser.send('Target.attachToTarget',
                           {'targetId': target, 'flatten': True})['sessionId']
    s = lambda method, params=None: browser.send(method, params, session)
    s('Page.enable')
    s('Page.navigate', {'url': Path(path).resolve().as_uri()})
    browser.wait_event('Page.loadEventFired')
    found = {}
    for term in terms:
        deadline = time.time() + 30
        count = -1
        while time.time() < deadline:
            expression = f'{SEARCH}({json.dumps(term)})'
            count = s('Runtime.evaluate', {'expression': expression,
                                           'returnByValue': True})['result'].get('value', -1)
            if count >= 0:
                break
            time.sleep(0.3)
        found[term] = count
    browser.send('Target.closeTarget', {'targetId': target})
    return found


def chapters(folder):
    """Every chapter page of a built book."""
    pages = sorted(p for p in Path(folder).glob('*.html') if p.name not in NOT_CHAPTERS)
    if not pages:
        sys.exit(f'no chapter pages in {folder}: is the book built?')
    return [str(p) for p in pages]


def check(browser, path, shots, table, width=WIDTH):
    screen = screen_height(width)
    target = browser.send('Target.createTarget', {'url': 'about:blank'})['targetId']
    session = browser.send('Target.attachToTarget',
                           {'targetId': target, 'flatten': True})['sessionId']
    s = lambda method, params=None: browser.send(method, params, session)
    s('Page.enable')
    s('Emulation.setDeviceMetricsOverride',
      {"width": width, "height": screen, "deviceScaleFactor": 1, "mobile": width < PHONE})
    s('Page.addScriptToEvaluateOnNewDocument', {'source': KEEP_SOURCES})
    s('Page.navigate', {'url': Path(path).resolve().as_uri()})
    browser.wait_event('Page.loadEventFired')
    deadline = time.time() + 30
    while not s('Runtime.evaluate', {'expression': RENDERED,
                                     'returnByValue': True})['result'].get('value'):
        if time.time() > deadline:
            break
        time.sleep(0.2)
    time.sleep(0.3)
    limits = {'minText': MIN_TEXT, 'screens': MAX_SCREENS, 'whole': bool(table)}
    evaluated = s('Runtime.evaluate', {'expression': f'{CHECKS}({json.dumps(limits)})',
                                       'returnByValue': True})
    if 'exceptionDetails' in evaluated:
        raise RuntimeError(f'the checks failed to run: {evaluated["exceptionDetails"]}')
    result = json.loads(evaluated['result']['value'])
    metrics = s('Page.getLayoutMetrics')['cssContentSize']
    height = min(int(metrics['height']), 12000)
    shot = s('Page.captureScreenshot', {
        'format': 'png', 'captureBeyondViewport': True,
        'clip': {'x': 0, 'y': 0, 'width': width, 'height': height, 'scale': 1}})
    name = '-'.join(Path(path).resolve().parts[-4:-1] + (Path(path).stem,)) + f'-{width}.png'
    (shots / name).write_bytes(base64.b64decode(shot['data']))
    if table:
        rows, columns = (int(n) for n in table.split('x'))
        if result['table'] != {'rows': rows, 'columns': columns}:
            result['problems'].append(f'the table is {result["table"]}, not {rows} x {columns}')
    browser.send('Target.closeTarget', {'targetId': target})
    return result, shots / name


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--shots', required=True, type=Path)
    parser.add_argument('--table', metavar='ROWSxCOLUMNS',
                        help='the pages must show a table of this shape, headers included')
    parser.add_argument('--diagram', action='store_true',
                        help='the pages must show at least one diagram')
    parser.add_argument('--book', action='append', default=[], metavar='DIR',
                        help='check every chapter of the book built in DIR')
    parser.add_argument('--search', action='append', default=[], metavar='TERM',
                        help="each --book's search must find TERM")
    parser.add_argument('--width', type=int, action='append', metavar='PX',
                        help='the window\'s width in px (390: a phone); once per width '
                             'to check the pages at (default 1280)')
    parser.add_argument('pages', nargs='*')
    args = parser.parse_args()
    args.shots.mkdir(parents=True, exist_ok=True)
    pages = list(args.pages)
    for folder in args.book:
        pages.extend(chapters(folder))
    if not pages:
        parser.error('no page to check: name pages or a --book')
    browser = Browser()
    failed = False
    try:
        for folder in args.book if args.search else []:
            first = chapters(folder)[0]
            for term, count in search(browser, first, args.search).items():
                status = 'ok' if count > 0 else 'FAIL'
                print(f'{status:4} {folder}: search for {term!r} found {max(count, 0)} section(s)')
                failed |= count <= 0
        for page, width in [(p, w) for w in args.width or [WIDTH] for p in pages]:
            result, shot = check(browser, page, args.shots, args.table, width)
            if args.diagram and not result['diagrams']:
                result['problems'].append('no diagram on the page')
            status = 'FAIL' if result['problems'] else 'ok'
            print(f'{status:4} {page} at {width} px: {len(result["diagrams"])} diagram(s) '
                  f'{[d["clients"] for d in result["diagrams"]]} clients, '
                  f'{result["blocks"]} blocks, table {result["table"]}; screenshot {shot}')
            for problem in result['problems']:
                print(f'     {problem}')
            failed |= bool(result['problems'])
    finally:
        browser.close()
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
