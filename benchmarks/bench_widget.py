"""The embeddable widget: its own script's size and its first paint, in headless Chromium.

    python benchmarks/bench_widget.py [--loads 30]

A service (scripted graph: no models, no store) and a docs page on a second loopback origin
run in this process; Chromium opens the page `--loads` times, each in a fresh browser context
(nothing cached). Per load:

* script: the time from the moment widget.js has arrived (Resource Timing `responseEnd`) to
  the widget's launcher being in the page (`fieldguide-widget-attached`) and to the next frame
  having been painted after that (`fieldguide-widget-painted`: a task queued from the first
  requestAnimationFrame after attaching runs once that frame is presented);
* page: the page's own first contentful paint, for scale.

Size: widget.js as served (its own code: chat.js + widget.js + settings) and gzip-compressed;
marked and DOMPurify are fetched from /vendor/ only when the panel opens or the browser is
idle, and are reported apart. Targets (issue #15): first paint < 100 ms after the script
loads, < 50 KB of script of its own.
"""
from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
MEASURE = """() => new Promise((resolve) => {
  const wait = () => {
    const painted = performance.getEntriesByName('fieldguide-widget-painted')[0];
    if (!painted) return setTimeout(wait, 10);
    const script = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/widget.js'));
    const attached = performance.getEntriesByName('fieldguide-widget-attached')[0];
    const fcp = performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint');
    resolve({loaded: script.responseEnd, attached: attached.startTime, painted: painted.startTime,
             fcp: fcp ? fcp.startTime : null, bytes: script.decodedBodySize});
  };
  wait();
})"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loads", type=int, default=30)
    args = parser.parse_args()
    os.environ.setdefault("DISABLE_TELEMETRY", "true")

    from playwright.sync_api import sync_playwright

    from fieldguide.service.assets import WEB_DIR, vendor_path
    from fieldguide.service.widget import widget_script
    from fieldguide.settings import Settings
    from fieldguide_testing.docs_site import docs_site
    from fieldguide_testing.serving import free_port, make_app, serve

    service_port, site_port = free_port(), free_port()
    service = f"http://127.0.0.1:{service_port}"
    own = widget_script(Settings()).encode()
    vendor = {name: vendor_path(WEB_DIR / "node_modules", name) for name in ("marked.umd.js", "purify.min.js")}
    print(f"widget.js as served: {len(own) / 1000:.1f} kB ({len(gzip.compress(own)) / 1000:.1f} kB gzip) "
          "— target < 50 kB of its own")
    for name, path in vendor.items():
        if path:
            data = path.read_bytes()
            print(f"  loaded later, not its own: /vendor/{name} {len(data) / 1000:.1f} kB "
                  f"({len(gzip.compress(data)) / 1000:.1f} kB gzip)")
    app = make_app(allowed_origins=f"http://127.0.0.1:{site_port}")
    attached, painted, fcps = [], [], []
    with serve(app, service_port), serve(docs_site(service), site_port) as site, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            for _ in range(args.loads + 1):  # the first load warms the server and the browser up
                context = browser.new_context()
                page = context.new_page()
                page.goto(site + "/")
                figures = page.evaluate(MEASURE)
                context.close()
                attached.append(figures["attached"] - figures["loaded"])
                painted.append(figures["painted"] - figures["loaded"])
                if figures["fcp"] is not None:
                    fcps.append(figures["fcp"])
        finally:
            browser.close()
    attached, painted = attached[1:], painted[1:]
    print(f"{args.loads} loads, each in a fresh context; ms after widget.js arrived:")
    for name, values in (("launcher in the page", attached), ("launcher painted", painted)):
        print(f"  {name:22s} median {statistics.median(values):6.1f}  p95 {percentile(values, 0.95):6.1f}  "
              f"max {max(values):6.1f}")
    if fcps:
        print(f"  (the page's own first contentful paint: median {statistics.median(fcps[1:] or fcps):.1f} ms "
              "after navigation)")
    print("target: painted < 100 ms")
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
