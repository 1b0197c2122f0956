// A button that opens a small menu under it: Escape or a click elsewhere closes it again.

export class Menu {
  /** onOpen(): called each time the menu opens, to fill it. */
  constructor(button, panel, onOpen = () => {}) {
    this.button = button;
    this.panel = panel;
    this.onOpen = onOpen;
    button.addEventListener('click', () => this.show(panel.hidden));
    button.parentElement.addEventListener('keydown', (event) => {
      if (event.key !== 'Escape' || panel.hidden) return;
      this.show(false);
      button.focus();
    });
    document.addEventListener('click', (event) => {
      if (!panel.hidden && !button.parentElement.contains(event.target)) this.show(false);
    });
  }

  show(open) {
    this.panel.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    if (open) this.onOpen();
  }
}
