// The status view: backend, model, context window, answers in flight, queue; one card per GPU.

import { api } from "./api.js";
import { t } from "./i18n.js";
import { el } from "./dom.js";

const $ = (sel) => document.querySelector(sel);
const GIB = 1024 ** 3;
let timer = 0;

function fact(label, value, extraClass = "") {
  const row = el("div", `fact ${extraClass}`);
  row.append(el("dt", "", label), el("dd", "", value ?? "—"));
  return row;
}

function gpuCard(g) {
  const card = el("article", `gpu-card${g.slowed ? " slowed" : ""}`);
  card.append(el("h3", "", `GPU ${g.index} · ${g.name}`));
  const mem = g.memory_total_bytes
    ? `${(g.memory_used_bytes / GIB).toFixed(1)} / ${(g.memory_total_bytes / GIB).toFixed(1)} GiB (${g.memory_used_pct ?? 0}%)` : null;
  const meter = el("progress", "gpu-mem");
  meter.max = 100;
  meter.value = g.memory_used_pct || 0;
  meter.setAttribute("aria-label", t("status.memory"));
  const dl = el("dl", "facts");
  dl.append(
    fact(t("status.memory"), mem),
    fact(t("status.util"), g.utilization_pct != null ? `${g.utilization_pct}%` : null),
    fact(t("status.temp"), g.temperature_c != null ? `${g.temperature_c} °C` : null),
    fact(t("status.clock"), g.sm_clock_mhz != null ? `${g.sm_clock_mhz} / ${g.max_sm_clock_mhz ?? "?"} MHz` : null),
    fact(t("status.power"), g.power_w != null ? `${g.power_w} / ${g.power_limit_w ?? "?"} W` : null),
    fact(t("status.throttle"), g.throttle_reasons?.length ? g.throttle_reasons.join(", ") : t("status.none"),
      g.slowed ? "warn" : ""),
  );
  card.append(meter, dl);
  return card;
}

export async function loadStatus() {
  clearTimeout(timer);
  const box = $("#status-backend");
  let status;
  let pending = [];
  try {
    [status, pending] = await Promise.all([api.status(), api.jobs().catch(() => [])]);
  } catch (err) {
    box.replaceChildren(el("p", "turn-error", err.message));
    return;
  }
  const b = status.backend || {};
  const waiting = /(\d+) waiting/.exec(b.detail || "");
  const dl = el("dl", "facts");
  dl.append(
    fact(t("status.health"), b.ok ? t("status.ok") : `${t("status.degraded")}: ${b.detail || ""}`, b.ok ? "ok" : "warn"),
    fact(t("status.backend"), b.name),
    fact(t("status.model"), b.model),
    fact(t("status.context"), b.context_window ? t("status.tokens", { n: b.context_window }) : null),
    fact(t("status.inFlight"), String(b.in_flight ?? 0)),
    fact(t("status.queue"), waiting ? waiting[1] : "0"),
    fact(t("status.jobsPending"), String(pending.filter((j) => ["pending", "running"].includes(j.status)).length)),
    fact(t("status.collections"), String(status.collections ?? "—")),
  );
  if (b.engine) {  // a managed engine (llama-server): its slots generating now and waiting
    const slots = b.engine.slots;
    dl.append(fact(t("status.engineSlots"), slots ? t("status.slotsBusy", slots) : b.engine.state));
  }
  box.replaceChildren(dl);
  const gpus = $("#status-gpus");
  gpus.replaceChildren();
  if (!status.gpus?.length) gpus.append(el("p", "muted", t("status.noGpu")));
  for (const g of status.gpus || []) gpus.append(gpuCard(g));
  if (!$("#view-status").hidden) timer = setTimeout(loadStatus, 5000);
}

/** The small health mark in the header. */
export async function loadHealth() {
  const mark = $("#health");
  try {
    const body = await api.health();
    const backend = body.backend || {};
    const label = [...new Set([backend.name, backend.model].filter(Boolean))].join(" · ");
    mark.textContent = body.status === "ok" ? `● ${label || t("status.ready")}` : `● ${t("status.degraded")}`;
    mark.dataset.state = body.status === "ok" ? "ok" : "degraded";
    mark.title = mark.textContent.slice(2);
  } catch {
    mark.textContent = `● ${t("status.unreachable")}`;
    mark.dataset.state = "down";
  }
}

export function wireStatus() {
  $("#status-refresh").addEventListener("click", loadStatus);
}
