/**
 * oidc-provider, the identity provider of the console's single sign-on test, loaded without its one
 * start-up warning: "Unsupported runtime" is printed on any Node whose `process.release` names no LTS
 * line, which includes Node 26 (26.10 carries no `lts` name). The project runs on Node 24 and 26; the
 * library works on both, and the warning would only stand in every test run's output.
 */
import type ProviderType from 'oidc-provider';

const UNSUPPORTED = 'oidc-provider WARNING: Unsupported runtime';

export async function loadOidcProvider(): Promise<typeof ProviderType> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].includes(UNSUPPORTED)) return;
    warn(...args);
  };
  try {
    return (await import('oidc-provider')).default;
  } finally {
    console.warn = warn;
  }
}
