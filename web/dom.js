// Small DOM helpers every view uses: an element with its class and text, a form of one field, and a
// destructive button that asks once more in place. Kept apart so that no view imports another just for these.

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A form of one field (its value, its aria-label) and a submit button: a comment, a question edited, a title. */
export function fieldForm(className, field, { value = "", label, submit, submitClass = "" }) {
  const form = el("form", className);
  field.value = value;
  field.setAttribute("aria-label", label);
  const button = el("button", submitClass, submit);
  button.type = "submit";
  form.append(field, button);
  return form;
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
