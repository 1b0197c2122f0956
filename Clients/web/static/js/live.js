// Pin changes as they happen, from the gateway's Server-Sent Events. The browser reconnects by itself and
// resumes with Last-Event-ID; a stream the server closed for good is reopened here, with a growing wait.
// A resume from further back than the gateway replays gets one `reset` event instead: reload the pins.
import { BASE } from './api.js';

const TYPES = ['LocationPosted', 'LocationUpdated', 'LocationDeleted', 'LocationHidden', 'LocationUnhidden'];

export function followChanges({ onChange, onStatus, onReset }) {
  let source = null;
  let lastEventId = '';
  let delay = 1000;
  let timer = null;
  let stopped = false;

  const open = () => {
    if (stopped) return;
    const query = lastEventId ? `?lastEventId=${encodeURIComponent(lastEventId)}` : '';
    source = new EventSource(`${BASE}/v1/StudentLocation/events${query}`);
    source.addEventListener('open', () => { delay = 1000; onStatus(true); });
    for (const type of TYPES) {
      source.addEventListener(type, (event) => {
        if (event.lastEventId) lastEventId = event.lastEventId;
        let data;
        try { data = JSON.parse(event.data); } catch { return; }
        onChange(type, data);
      });
    }
    source.addEventListener('reset', (event) => {
      if (event.lastEventId) lastEventId = event.lastEventId;
      onReset();
    });
    source.addEventListener('error', () => {
      onStatus(false);
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        timer = setTimeout(open, delay);
        delay = Math.min(delay * 2, 30000);
      }
    });
  };
  open();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      source?.close();
      onStatus(false);
    },
  };
}
