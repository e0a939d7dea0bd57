/**
 * A command-line usage mistake: the launcher and the apps print its message with the usage text
 * and exit 2. In a module of its own so the apps need not import the launcher (in the bundle,
 * `dsh --version` then loads the launcher's code as one file).
 */
export class UsageError extends Error {}
