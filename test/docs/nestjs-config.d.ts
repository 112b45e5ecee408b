// @nestjs/config is no dev dependency: the README's forRootAsync sample is checked against the members it uses,
// declared here as @nestjs/config 12.0.1 declares them (dist/config.module.d.ts, dist/config.service.d.ts), but
// for `unknown` where it says `any` and the overloads that take a default value or `{ infer: true }`.
declare module '@nestjs/config' {
  import type { DynamicModule } from '@nestjs/common';

  export interface ConfigModuleOptions {
    isGlobal?: boolean;
    envFilePath?: string | string[];
    ignoreEnvFile?: boolean;
    cache?: boolean;
  }

  export class ConfigModule {
    static forRoot(options?: ConfigModuleOptions): Promise<DynamicModule>;
  }

  export class ConfigService<K = Record<string | symbol, unknown>, WasValidated extends boolean = false> {
    get<T = unknown>(
      propertyPath: keyof K extends never ? string | symbol : keyof K,
    ): WasValidated extends true ? T : T | undefined;
    getOrThrow<T = unknown>(propertyPath: keyof K extends never ? string | symbol : keyof K): Exclude<T, undefined>;
  }
}
