/** A command that cannot be carried out as given: its message is all the operator is shown (exit code 1). */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}
