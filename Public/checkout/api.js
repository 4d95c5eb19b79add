// JSON over fetch with a deadline: every call the Apple Pay sheet waits on must finish well
// inside Safari's 30 s, so each one gives up after STEP_TIMEOUT_MS.

export const STEP_TIMEOUT_MS = 25_000;

/** A failed call: `status` 0 for network failures and timeouts; `body` is the server's JSON, if any. */
export class ApiError extends Error {
  constructor(message, { status = 0, body = null, timedOut = false } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.timedOut = timedOut;
  }
}

export async function request(method, path, body, timeoutMs = STEP_TIMEOUT_MS) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: body === undefined ? { Accept: 'application/json' } : { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: controller.signal,
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch (error) {
    throw new ApiError(error.name === 'AbortError' ? 'timeout' : 'network', { timedOut: error.name === 'AbortError' });
  } finally {
    clearTimeout(timer);
  }
  let json = null;
  try {
    json = await response.json();
  } catch {
    // Not JSON: the status alone has to do.
  }
  if (!response.ok) {
    throw new ApiError(json?.error?.message ?? `HTTP ${response.status}`, { status: response.status, body: json });
  }
  return json;
}

export const getJSON = (path, timeoutMs) => request('GET', path, undefined, timeoutMs);
export const postJSON = (path, body, timeoutMs) => request('POST', path, body, timeoutMs);
