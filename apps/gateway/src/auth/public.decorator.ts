import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'infer:public';
/** Marks a route that needs no API key (health, metrics, the OpenAPI document). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
