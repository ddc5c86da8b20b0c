// fetch for the tests' calls to sandbox daemons: a refused or reset connection says which daemon and URL (node's
// own error is a bare "fetch failed" whose cause names only a port).

export async function fetchFrom(what: string, url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
    const code = cause && 'code' in cause ? String(cause.code) : undefined;
    const reason = code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    throw new Error(`${what} at ${url}: ${reason}`, { cause: err });
  }
}
