// The account menu in the top bar: who is logged in, and erasing the account, which asks first.
import * as api from './api.js';
import { fullName } from './format.js';
import { Menu } from './menu.js';
import { ask } from './question.js';

const $ = (id) => document.getElementById(id);

export class AccountMenu {
  /**
   * student(): the logged-in student; onErased(erased): the account is gone (the server's { key, pins } or, when
   * it finishes later, { key, pending }); onSessionEnded(): back to the login; onError(message): shown as the
   * page's errors are.
   */
  constructor({ student, onErased, onSessionEnded, onError }) {
    this.student = student;
    this.onErased = onErased;
    this.onSessionEnded = onSessionEnded;
    this.onError = onError;
    this.button = $('account-button');
    this.menu = new Menu(this.button, $('account-menu'), () => {
      $('account-name').textContent = `Logged in as ${fullName(this.student())}`;
    });
    $('erase-account').addEventListener('click', () => this.erase());
  }

  async erase() {
    this.menu.show(false);
    const name = fullName(this.student());
    const sure = await ask({
      title: 'Erase your account?',
      text: `This erases your account (${name}) and every pin you have posted: from the map now, from the map at `
        + 'every past moment and from every pin’s history. You will be logged out. This cannot be undone.',
      yes: 'Erase my account', no: 'Keep my account', danger: true,
    });
    if (!sure) return;
    this.button.disabled = true;
    try {
      const answer = await api.eraseAccount();
      this.onErased(answer?.erased ?? {});
    } catch (error) {
      if (error.kind === 'notLoggedIn') this.onSessionEnded();
      else this.onError(`Could not erase your account: ${error.message}`);
    } finally {
      this.button.disabled = false;
    }
  }
}
