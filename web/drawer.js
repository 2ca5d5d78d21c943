// The conversations sidebar as a drawer on narrow screens. ☰ opens it below the header, over a dimmed
// backdrop that takes the taps meant for the page beneath; its close button, Esc, a tap on the backdrop,
// ☰ again and going somewhere (a conversation, a new one, another view) close it. A closing the user
// asked for gives the focus back to ☰; while it is open the page behind it is inert.

const NARROW = window.matchMedia("(max-width: 48rem)"); // the width at which app.css makes it a drawer
const $ = (sel) => document.querySelector(sel);

export const drawerOpen = () => document.body.classList.contains("sidebar-open");

/** The drawer and its backdrop start where the header ends (the header wraps to two rows on a phone). */
function placeBelowHeader() {
  document.documentElement.style.setProperty("--topbar-height", `${$(".topbar").offsetHeight}px`);
}

function setOpen(open) {
  document.body.classList.toggle("sidebar-open", open);
  $("#sidebar-toggle").setAttribute("aria-expanded", String(open));
  $("#sidebar-backdrop").hidden = !open;
  $(".main").inert = open;
}

export function openDrawer() {
  placeBelowHeader();
  setOpen(true);
  $("#sidebar-close").focus();
}

/** Close the drawer (when open); `focus` gives the focus back to ☰. */
export function closeDrawer({ focus = true } = {}) {
  if (!drawerOpen()) return;
  setOpen(false);
  if (focus) $("#sidebar-toggle").focus();
}

export function wireDrawer() {
  $("#sidebar-toggle").addEventListener("click", () => (drawerOpen() ? closeDrawer() : openDrawer()));
  $("#sidebar-close").addEventListener("click", () => closeDrawer());
  $("#sidebar-backdrop").addEventListener("click", (ev) => {
    ev.preventDefault();
    closeDrawer();
  });
  // Wired before the chat's own Esc (which stops an answer): while the drawer is open, Esc closes only it.
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || !drawerOpen() || document.querySelector("dialog[open]")) return;
    ev.stopImmediatePropagation();
    closeDrawer();
  });
  window.addEventListener("hashchange", () => closeDrawer({ focus: false }));
  window.addEventListener("resize", () => { if (drawerOpen()) placeBelowHeader(); });
  NARROW.addEventListener("change", () => { if (!NARROW.matches) closeDrawer({ focus: false }); });
}
