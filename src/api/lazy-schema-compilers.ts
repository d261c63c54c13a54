// Fastify compiles every route's JSON schemas (Ajv validators, fast-json-stringify serializers)
// while the app starts: some 200 schemas, the largest part of `svc serve`'s start after module
// loading (issue 18). These factories hand Fastify its own default compilers, each schema compiled
// on the first request that needs it instead: the same validators and serializers, later.
//
// The defaults are loaded from beside fastify (createRequire), the very copies it would use. No route
// has a `headers` schema, the one place where Fastify treats a custom compiler differently (it then
// leaves header names as written instead of lowercasing them).
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type Compile<T> = (route: unknown) => T;
type Factory<T> = (externalSchemas: unknown, options: unknown) => Compile<T>;

const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));

/** A validator compiled on its first call; Fastify reads `errors` and `schemaEnv` off Ajv's function. */
function lazyValidator(compile: () => ValidateFn): ValidateFn {
  let fn: ValidateFn | undefined;
  const get = () => (fn ??= compile());
  const v = ((data: unknown, ctx?: unknown) => get()(data, ctx)) as ValidateFn;
  // Fastify passes the request as parent data when the function has `schemaEnv` (so that Ajv can
  // coerce a root value): asking for it compiles, as the call right after it would.
  Object.defineProperty(v, 'schemaEnv', { get: () => get().schemaEnv });
  Object.defineProperty(v, 'errors', { get: () => fn?.errors });
  return v;
}

interface ValidateFn {
  (data: unknown, ctx?: unknown): unknown;
  errors?: unknown;
  schemaEnv?: unknown;
}

function lazyFactory<T>(factory: Factory<T>, wrap: (compile: () => T) => T): Factory<T> {
  return (externalSchemas, options) => {
    const compiler = factory(externalSchemas, options);
    return (route) => wrap(() => compiler(route));
  };
}

/** Fastify's `schemaController` option: its default compilers, compiling each schema on first use. */
export function lazySchemaController(): NonNullable<FastifyServerOptions['schemaController']> {
  const validators = (fromFastify('@fastify/ajv-compiler') as () => Factory<ValidateFn>)();
  const serializers = (fromFastify('@fastify/fast-json-stringify-compiler') as () => Factory<(data: unknown) => string>)();
  const controller = {
    compilersFactory: {
      buildValidator: lazyFactory(validators, lazyValidator),
      buildSerializer: lazyFactory(serializers, (compile) => {
        let fn: ((data: unknown) => string) | undefined;
        return (data: unknown) => (fn ??= compile())(data);
      }),
    },
  };
  return controller as NonNullable<FastifyServerOptions['schemaController']>;
}
