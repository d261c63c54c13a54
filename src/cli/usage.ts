// The usage error every command shares (exit 64); its own module so that a command module can use
// it without importing main.ts.

export function usage(message: string): never {
  process.stderr.write(`svc: ${message}\nRun 'svc --help' for usage.\n`);
  process.exit(64);
}
