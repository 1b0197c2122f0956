// A yes/no question in an alert dialog; resolves true for yes.
export function ask({ title, text, yes, no }) {
  const dialog = document.getElementById('question-dialog');
  document.getElementById('question-title').textContent = title;
  document.getElementById('question-text').textContent = text;
  document.getElementById('question-yes').textContent = yes;
  document.getElementById('question-no').textContent = no;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
    dialog.showModal();
    document.getElementById('question-no').focus();
  });
}
