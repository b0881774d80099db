import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  ApiError,
  ErrorType,
  type ImageInputRef,
  type ImageResponse,
  ImageServiceResultSchema,
} from '@infer/contracts';
import {
  checkImageSignature,
  createImageStore,
  extensionOf,
  type ImageMime,
  type ImageStore,
  type StoredImage,
  signedImageUrl,
} from '@infer/image-store';
import type { Logger } from '@infer/telemetry';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER, REDIS } from '../infra/tokens.js';
import { CLOCK, type Clock } from './clock.js';

/** `img_<base64url>.<ext>`: the only ids the public route serves (edit inputs are `upl_` and never served). */
const FILE_RE = /^(img_[A-Za-z0-9_-]{8,120})\.(png|jpg|webp)$/;

export const imageNotFound = () =>
  new ApiError(404, 'No image at this URL. Image URLs are signed and temporary; use the URL as returned.', {
    type: ErrorType.invalidRequest,
    code: 'image_not_found',
  });
export const imageExpired = () =>
  new ApiError(410, 'This image URL has expired (image URLs are valid for about 60 minutes).', {
    type: ErrorType.invalidRequest,
    code: 'image_expired',
  });

/**
 * The gateway's side of images: it keeps the inputs of edits in the image store while their job runs,
 * turns the image-service's stored ids into the public answer (signed URLs, or base64 read back from
 * the store), and serves signed URLs until they expire. Its clock is the injectable CLOCK.
 */
@Injectable()
export class ImageDelivery implements OnApplicationShutdown {
  readonly store: ImageStore;
  private readonly secret: string;
  private baseUrl: string | null;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(REDIS) redis: Redis,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    this.store = createImageStore(config, { redis, now: () => this.clock.now() });
    if (config.IMAGE_URL_SECRET) {
      this.secret = config.IMAGE_URL_SECRET;
    } else {
      // Only reachable with ALLOW_INSECURE_HTTP (the config refuses to start otherwise).
      this.secret = randomBytes(32).toString('base64url');
      log.warn(
        'IMAGE_URL_SECRET is unset: image URLs are signed with a random per-process secret (development mode only)',
      );
    }
    this.baseUrl = config.PUBLIC_BASE_URL?.replace(/\/+$/, '') ?? null;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }

  /** The public origin for image URLs: PUBLIC_BASE_URL, else the address the gateway listens on. */
  private origin(): string {
    if (this.baseUrl) return this.baseUrl;
    const addr = this.adapterHost.httpAdapter.getHttpServer().address() as AddressInfo | null;
    const host = this.config.HOST === '0.0.0.0' || this.config.HOST === '::' ? '127.0.0.1' : this.config.HOST;
    const scheme = this.config.TLS_CERT_FILE ? 'https' : 'http';
    this.baseUrl = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${addr?.port ?? this.config.PORT}`;
    return this.baseUrl;
  }

  /** The image-service's result -> the spec's ImageResponse. */
  async present(data: unknown): Promise<ImageResponse> {
    const parsed = ImageServiceResultSchema.safeParse(data);
    if (!parsed.success) {
      this.log.error({ issues: parsed.error.issues.slice(0, 3) }, 'unexpected image-service result');
      throw ApiError.internal();
    }
    const r = parsed.data;
    if (r.response_format === 'url') {
      const origin = this.origin();
      return {
        created: r.created,
        data: r.images.map((img) => ({
          url: signedImageUrl(origin, img.id, extensionOf(img.content_type), img.expires_at, this.secret),
        })),
      };
    }
    const out: ImageResponse['data'] = [];
    for (const img of r.images) {
      const stored = await this.store.get(img.id);
      if (!stored) {
        this.log.error({ id: img.id }, 'a b64_json result was gone from the image store');
        throw ApiError.internal('The generated image was lost before it could be returned; retry.');
      }
      out.push({ b64_json: stored.bytes.toString('base64') });
    }
    await Promise.all(r.images.map((img) => this.store.delete(img.id).catch(() => undefined)));
    return { created: r.created, data: out };
  }

  /** Keeps the inputs of an edit in the store for the length of the request; the service reads them by id. */
  async storeInputs(images: Array<{ bytes: Buffer; contentType: ImageMime }>): Promise<ImageInputRef[]> {
    const ttl = Math.ceil(this.config.REQUEST_TIMEOUT_MS / 1000) + 60;
    const refs: ImageInputRef[] = images.map((img) => ({
      id: `upl_${randomBytes(18).toString('base64url')}`,
      content_type: img.contentType,
      bytes: img.bytes.length,
    }));
    try {
      await Promise.all(images.map((img, i) => this.store.put(refs[i]!.id, img.bytes, img.contentType, ttl)));
    } catch (err) {
      this.log.error({ err }, 'could not store the input images of an edit');
      await this.deleteInputs(refs);
      throw ApiError.internal();
    }
    return refs;
  }

  async deleteInputs(refs: ImageInputRef[]): Promise<void> {
    await Promise.all(refs.map((r) => this.store.delete(r.id).catch(() => undefined)));
  }

  /**
   * GET /v1/images/files/<id>.<ext>?expires&sig: the image while the signature holds and the store
   * keeps it. A bad signature (or an unknown file name) is 404; a past expiry, or an image the store
   * no longer has, is 410.
   */
  async open(file: string, expires: unknown, sig: unknown): Promise<StoredImage> {
    const m = FILE_RE.exec(file);
    if (!m?.[1]) throw imageNotFound();
    const id = m[1];
    const check = checkImageSignature(
      id,
      typeof expires === 'string' ? expires : undefined,
      typeof sig === 'string' ? sig : undefined,
      this.secret,
      this.clock.now(),
    );
    if (check === 'invalid') throw imageNotFound();
    if (check === 'expired') throw imageExpired();
    let img: StoredImage | null;
    try {
      img = await this.store.get(id);
    } catch (err) {
      this.log.error({ err }, 'image store read failed');
      throw ApiError.internal();
    }
    if (!img) throw imageExpired();
    return img;
  }

  /** Seconds a served image may be cached: until its URL expires. */
  maxAge(expires: string): number {
    return Math.max(0, Math.floor(Number(expires) - this.clock.now() / 1000));
  }
}
