// The error of a request the pipeline manager refuses (src/pipelines/pipeline-manager.ts and its parts).

/** Thrown for requests the manager refuses; the API maps `status` to the HTTP code. */
export class ManagerError extends Error {
  constructor(readonly status: 400 | 404 | 409 | 422 | 503, message: string) {
    super(message);
  }
}
