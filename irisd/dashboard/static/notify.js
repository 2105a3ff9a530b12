// --- browser notifications (README "Notifications") ---------------------------------
// Only while the page is in the background: a person looking at it sees the Inbox.
// Each thing once per NOTIFY_EVERY_MS (a flapping finding is said once), at most
// NOTIFY_PER_MINUTE a minute. The browser asks for permission at the first click.

const NOTIFY_EVERY_MS = 10 * 60 * 1000;
const NOTIFY_PER_MINUTE = 10;
const notified = new Map(); // key -> when it was said
let notifiedRecently = [];

export function notifyPerson(key, title, body) {
  if (!("Notification" in window) || Notification.permission !== "granted" || !document.hidden) return;
  const now = Date.now();
  const said = notified.get(key);
  if (said !== undefined && now - said < NOTIFY_EVERY_MS) return;
  notifiedRecently = notifiedRecently.filter((at) => now - at < 60_000);
  if (notifiedRecently.length >= NOTIFY_PER_MINUTE) return;
  notifiedRecently.push(now);
  notified.set(key, now);
  if (notified.size > 1000) for (const [k, at] of notified) if (now - at >= NOTIFY_EVERY_MS) notified.delete(k);
  const shown = new Notification(title, { body, tag: key });
  shown.onclick = () => { window.focus(); shown.close(); };
}

export function notifyFindings(findings) {
  for (const f of findings || []) {
    if (f.severity === "warning" || f.severity === "error") notifyPerson(`health:${f.kind}:${f.subject}`, `Iris health: ${f.summary}`, f.fix || "");
  }
}

document.addEventListener("click", () => {
  if ("Notification" in window && Notification.permission === "default") Notification.requestPermission();
}, { once: true });
