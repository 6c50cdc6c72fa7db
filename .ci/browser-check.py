#!/usr/bin/env python3
"""Opens pages in headless Chromium, as a reader at 1280 px would, and checks
what the course promises about them:

- every Mermaid diagram rendered as an SVG, with a lifeline for every client
  its source declares;
- nothing is wider than its column: no code block, timeline or table
  overflows, and the page itself does not scroll sideways;
- with --table, the page's table has the rows and columns it should (and, as
  it does not overflow, shows them all);
- every diagram fits its column (scaled) and has a link that opens it at full
  size, and none is taller than a few screens;
- with --width 390, the same checks on a phone's screen (the matrix stays
  whole: every stage's column on screen, none behind a scrollbar);
- with --book, every chapter of a built mdBook (its html/ folder or the book
  folder itself) is checked; with --search TERM, the book's search box finds
  at least one section for each TERM (a Chinese word as well as a Latin one).

It drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe),
so it needs nothing but Python's standard library and Debian's `chromium`.
Each page's screenshot is written into --shots.

    browser-check.py --shots target/screenshots [--table RxC] [--diagram] FILE...
    browser-check.py --shots target/screenshots --book book/zh/book/html --search 看门狗
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
HEIGHT = 900

# "A few screens": a diagram taller than this is too long to follow.
MAX_DIAGRAM_HEIGHT = 5 * HEIGHT

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

CHECKS = """
(() => {
  const problems = [];
  const diagrams = [];
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
    if (box.width > room.width + 1) {
      problems.push(`a diagram is wider than its column (${Math.round(box.width)} > ${Math.round(room.width)} px)`);
    }
    if (box.height > MAX_HEIGHT) {
      problems.push(`a diagram is ${Math.round(box.height)} px tall, more than ${MAX_HEIGHT}`);
    }
    const next = el.nextElementSibling;
    // In the book (which has a search toggle), mermaid-init.js adds the link.
    if (document.getElementById('mdbook-search-toggle') &&
        !(next && next.classList.contains('diagram-full') && next.querySelector('a[href]'))) {
      problems.push('a diagram has no link to open it at full size');
    }
    diagrams.push({clients: declared.length, lifelines, width: box.width, height: box.height});
  }
  const column = document.querySelector('main') || document.body;
  const right = column.getBoundingClientRect().right + 1;
  const blocks = [...document.querySelectorAll('pre:not(.mermaid), table')];
  for (const el of blocks) {
    const what = el.tagName === 'TABLE' ? 'a table' :
      (el.classList.contains('timeline') ? 'a timeline' : 'a code block');
    const start = (el.textContent || '').trim().split('\\n')[0].slice(0, 60);
    if (el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${what} scrolls sideways (${el.scrollWidth} > ${el.clientWidth} px): ${start}`);
    }
    if (el.getBoundingClientRect().right > right) {
      problems.push(`${what} overflows its column: ${start}`);
    }
    const wrapper = el.parentElement;
    if (el.tagName === 'TABLE' && wrapper && wrapper.scrollWidth > wrapper.clientWidth + 1) {
      problems.push(`a table hides columns behind a scrollbar (${wrapper.scrollWidth} > ${wrapper.clientWidth} px): ${start}`);
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth) {
    problems.push(`the page scrolls sideways (${document.documentElement.scrollWidth} px)`);
  }
  const table = document.querySelector('table');
  const shape = table ? {rows: table.rows.length, columns: table.rows[0].cells.length} : null;
  return JSON.stringify({problems, diagrams, blocks: blocks.length, table: shape});
})()
""".replace('MAX_HEIGHT', str(MAX_DIAGRAM_HEIGHT))

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
    target = browser.send('Target.createTarget', {'url': 'about:blank'})['targetId']
    session = browser.send('Target.attachToTarget',
                           {'targetId': target, 'flatten': True})['sessionId']
    s = lambda method, params=None: browser.send(method, params, session)
    s('Page.enable')
    s('Emulation.setDeviceMetricsOverride',
      {'width': width, 'height': HEIGHT, 'deviceScaleFactor': 1, 'mobile': width < 600})
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
    evaluated = s('Runtime.evaluate', {'expression': CHECKS, 'returnByValue': True})
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
    parser.add_argument('--width', type=int, default=WIDTH,
                        help='the window\'s width in px (390: a phone)')
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
        for page in pages:
            result, shot = check(browser, page, args.shots, args.table, args.width)
            if args.diagram and not result['diagrams']:
                result['problems'].append('no diagram on the page')
            status = 'FAIL' if result['problems'] else 'ok'
            print(f'{status:4} {page} at {args.width} px: {len(result["diagrams"])} diagram(s) '
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
