// Small DOM helpers every view uses: an element with its class and text, and a destructive button that
// asks once more in place. Kept apart so that no view imports another just for these.

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A destructive button asks once more in place (no window.confirm) before it acts. */
export function confirmThen(button, question, action) {
  if (button.dataset.armed) {
    action();
    return;
  }
  const label = button.textContent;
  button.dataset.armed = "1";
  button.textContent = question;
  button.classList.add("armed");
  setTimeout(() => {
    delete button.dataset.armed;
    button.textContent = label;
    button.classList.remove("armed");
  }, 4000);
}
