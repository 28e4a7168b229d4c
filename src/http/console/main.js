// The admin console's entry (docs/operations.md): wires the page's controls, then shows the
// view the URL names and starts the refresh loop. Loaded by index.html as an ES module.

import { wireActions } from './actions.js';
import { wireForms } from './forms.js';
import { onRoute, pause, refreshNow, schedule, showView } from './refresh.js';
import { route } from './router.js';
import { $ } from './util.js';

if (document.body.dataset.demo !== 'on')
  document.querySelectorAll('.demo-only').forEach((el) => {
    el.hidden = true;
  });

wireActions();
wireForms();
window.addEventListener('hashchange', onRoute);
$('auto-refresh').addEventListener('change', schedule);
document.addEventListener('visibilitychange', () => {
  if (document.hidden) pause();
  else refreshNow();
});
// "More" closes when a link in it is followed, or a click lands elsewhere.
document.addEventListener('click', (ev) => {
  if (!ev.target.closest('#nav-more summary')) $('nav-more').open = false;
});

showView(route());
refreshNow();
