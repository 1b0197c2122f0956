// A yes/no question in an alert dialog; resolves true for yes. `danger` marks a yes that cannot be undone.
export function ask({ title, text, yes, no, danger = false }) {
  const dialog = document.getElementById('question-dialog');
  const yesButton = document.getElementById('question-yes');
  document.getElementById('question-title').textContent = title;
  document.getElementById('question-text').textContent = text;
  yesButton.textContent = yes;
  yesButton.classList.toggle('danger', danger);
  yesButton.classList.toggle('primary', !danger);
  document.getElementById('question-no').textContent = no;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
    dialog.showModal();
    document.getElementById('question-no').focus();
  });
}
