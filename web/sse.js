// A text/event-stream reader over fetch(): EventSource cannot POST a question.

/** Read a streaming response, calling onEvent(name, data) with each event's JSON data. */
export async function readEvents(resp, onEvent) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    const blocks = buffer.split(/\r\n\r\n|\n\n|\r\r/);
    buffer = blocks.pop();
    for (const block of blocks) dispatch(block, onEvent);
  }
  if (buffer.trim()) dispatch(buffer, onEvent);
}

function dispatch(block, onEvent) {
  let name = "message";
  const data = [];
  for (const line of block.split(/\r\n|\n|\r/)) {
    if (!line || line.startsWith(":")) continue; // comments keep the connection alive
    const idx = line.indexOf(":");
    const field = idx < 0 ? line : line.slice(0, idx);
    const val = idx < 0 ? "" : line.slice(idx + 1).replace(/^ /, "");
    if (field === "event") name = val;
    else if (field === "data") data.push(val);
  }
  if (data.length) onEvent(name, JSON.parse(data.join("\n")));
}
