// UI strings in English and Chinese (web/strings/). The language comes from the saved choice, else the browser.
// Only the page's own words are translated; documents and answers are shown as they are.

const STORAGE_KEY = "rag.lang";

// The words of each language are data (strings/<lang>.json), loaded once before any view draws.
const load = async (lang) => [lang, await (await fetch(new URL(`./strings/${lang}.json`, import.meta.url))).json()];
const STRINGS = Object.fromEntries(await Promise.all(["en", "zh"].map(load)));

export const LANGUAGES = { en: "English", zh: "中文" };

function initialLanguage() {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved && STRINGS[saved]) return saved;
  const wanted = navigator.languages?.length ? navigator.languages : [navigator.language || "en"];
  return wanted.some((l) => String(l).toLowerCase().startsWith("zh")) ? "zh" : "en";
}

let current = initialLanguage();
const listeners = [];

export const language = () => current;

const plurals = {}; // language -> Intl.PluralRules

/** `key`'s form for the count `n` in the current language ("key.one" for 1 in English), when it has one. */
function plural(key, n) {
  if (typeof n !== "number") return key;
  plurals[current] ??= new Intl.PluralRules(current);
  const form = `${key}.${plurals[current].select(n)}`;
  return form in STRINGS[current] || (!(key in STRINGS[current]) && form in STRINGS.en) ? form : key;
}

/** Whether the page has words of its own for `key`. */
export const has = (key) => key in STRINGS[current] || key in STRINGS.en;

/**
 * The string for key in the current language, with {name} placeholders filled from vars; a count `n`
 * picks the key's plural form where it has one ("key.one": "1 file", "key": "{n} files").
 */
export function t(key, vars = {}) {
  const chosen = plural(key, vars.n);
  const text = STRINGS[current][chosen] ?? STRINGS.en[chosen] ?? key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

/** Fill every [data-i18n] (text), [data-i18n-placeholder] and [data-i18n-label] (aria-label) under root. */
export function translate(root = document) {
  root.querySelectorAll("[data-i18n]").forEach((n) => { n.textContent = t(n.dataset.i18n); });
  root.querySelectorAll("[data-i18n-placeholder]").forEach((n) => { n.placeholder = t(n.dataset.i18nPlaceholder); });
  root.querySelectorAll("[data-i18n-label]").forEach((n) => n.setAttribute("aria-label", t(n.dataset.i18nLabel)));
  document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
  document.title = t("app.title");
}

/** Switch language, remember it, and tell the views to redraw their strings. */
export function setLanguage(lang) {
  if (!STRINGS[lang]) return;
  current = lang;
  localStorage.setItem(STORAGE_KEY, lang);
  translate();
  listeners.forEach((fn) => fn(lang));
}

export const onLanguageChange = (fn) => listeners.push(fn);
