// What the dashboard benchmarks share: a change → its row in the page's
// timeline, timed by a MutationObserver in the page.
//
// measure(browser, pageUrl, count, label, write): opens the page, then
// `count` times calls write(key) (key "bench LABEL I") and waits for a
// message whose body starts with that key; the latencies in ms. For label
// "live" it first waits for the page's live stream; between changes it
// pauses a little, and for "poll" a random time across the poller's 1 s
// period (else every change would follow a poll).
export async function measure(browser, pageUrl, count, label, write) {
  const page = await browser.newPage();
  await page.goto(pageUrl, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]');
  await page.evaluate(() => {
    window.__seen = {};
    new MutationObserver(() => {
      const t = performance.timeOrigin + performance.now();
      for (const m of document.querySelectorAll("#timeline .msg .body")) {
        const k = m.textContent;
        if (k.startsWith("bench ") && !(k in window.__seen)) window.__seen[k] = t;
      }
    }).observe(document.getElementById("timeline"), { childList: true, subtree: true });
  });
  if (label === "live") await page.waitForFunction(() => document.querySelector("#live").classList.contains("on"));
  const lat = [];
  for (let i = 0; i < count; i++) {
    const key = `bench ${label} ${i}`;
    const t0 = performance.timeOrigin + performance.now();
    write(key);
    await page.waitForFunction((k) => k in window.__seen, { polling: 5, timeout: 5000 }, key);
    lat.push(await page.evaluate((k) => window.__seen[k], key) - t0);
    await new Promise((r) => setTimeout(r, label === "poll" ? Math.random() * 1000 : 5 + Math.random() * 20));
  }
  await page.close();
  return lat;
}

export function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))];
}
