// samsa console: live charts. No inline script runs on these pages (the
// Content-Security-Policy allows only this file), and values reach the
// page only as text.
"use strict";

function drawChart(canvas, points, label) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 30;
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = "#ccc";
  ctx.strokeRect(pad, 4, w - pad - 4, h - pad);
  if (points.length === 0) {
    ctx.fillStyle = "#888";
    ctx.fillText("waiting for samples", pad + 8, h / 2);
    return;
  }
  const t0 = points[0][0], t1 = Math.max(points[points.length - 1][0], t0 + 1);
  let top = 0;
  for (const p of points) top = Math.max(top, p[1]);
  if (top === 0) top = 1;
  ctx.strokeStyle = "#2b6cb0";
  ctx.lineWidth = 2;
  ctx.beginPath();
  points.forEach((p, i) => {
    const x = pad + (w - pad - 4) * (p[0] - t0) / (t1 - t0);
    const y = 4 + (h - pad) * (1 - p[1] / top);
    if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
  });
  ctx.stroke();
  if (points.length < 3) {
    // Too few points for a line to show: mark each one.
    ctx.fillStyle = "#2b6cb0";
    for (const p of points) {
      const x = pad + (w - pad - 4) * (p[0] - t0) / (t1 - t0);
      const y = 4 + (h - pad) * (1 - p[1] / top);
      ctx.beginPath();
      ctx.arc(x, y, 3, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
  ctx.fillStyle = "#333";
  ctx.fillText(formatNumber(top) + (label || ""), pad + 4, 14);
  ctx.fillText(formatNumber(points[points.length - 1][1]) + " now", w - 110, h - 8);
}

function formatNumber(v) {
  if (v >= 1e9) return (v / 1e9).toFixed(1) + "G";
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
  return (Math.round(v * 10) / 10).toString();
}

function pollThroughput() {
  const canvases = document.querySelectorAll("canvas[data-series]");
  if (canvases.length === 0) return;
  const tick = () => fetch("/console/api/throughput", {credentials: "same-origin"})
    .then(r => r.json())
    .then(d => {
      for (const c of canvases) {
        const key = c.dataset.series;
        drawChart(c, d.points.map(p => [p.t, p[key]]), "/s");
      }
    })
    .catch(() => {});
  tick();
  setInterval(tick, 5000);
}

function pollLag() {
  const c = document.getElementById("chart-lag");
  if (!c) return;
  const points = [];
  const url = "/console/api/group-lag?name=" + encodeURIComponent(c.dataset.group);
  const tick = () => fetch(url, {credentials: "same-origin"})
    .then(r => r.json())
    .then(d => {
      if (points.length === 0 && d.history) {
        // The last 15 minutes as the broker kept them from earlier polls.
        for (const p of d.history) points.push(p);
      }
      if (points.length === 0 || points[points.length - 1][0] < d.t - 1000) points.push([d.t, d.lag]);
      // 15 minutes of samples every 5 s.
      while (points.length > 180) points.shift();
      drawChart(c, points, " records");
      const total = document.getElementById("total-lag");
      if (total) total.textContent = String(d.lag);
    })
    .catch(() => {});
  tick();
  setInterval(tick, 5000);
}

document.addEventListener("DOMContentLoaded", () => {
  pollThroughput();
  pollLag();
});
