// The error of a request the pipeline manager refuses (src/pipelines/pipeline-manager.ts and its parts).
import { HttpError } from '../core/http-errors.js';

/** Thrown for requests the manager refuses: its `status` picks the HTTP error catalog's code (core/http-errors.ts). */
export class ManagerError extends HttpError {
  constructor(
    readonly status: 400 | 404 | 409 | 422 | 503,
    message: string,
  ) {
    super(
      ({ 400: 'HTTP_PIPELINE_INVALID', 404: 'HTTP_PIPELINE_NOT_FOUND', 409: 'HTTP_PIPELINE_CONFLICT', 422: 'HTTP_INVALID', 503: 'HTTP_NO_WORKER' } as const)[
        status
      ],
      message,
    );
  }
}
