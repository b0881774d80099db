import type { ImageInputRef } from '@infer/contracts';
import { Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Public } from '../auth/public.decorator.js';
import { readEditForm } from '../images/edit-form.js';
import { ImageDelivery } from '../images/image-delivery.service.js';
import { ModelGateway } from './model-gateway.service.js';
import { Routes, routeCaller } from './routes.js';

/**
 * POST /v1/images/generations (JSON), POST /v1/images/edits (multipart) and the public, signed
 * GET /v1/images/files/<id>.<ext> that serves the results for about 60 minutes. The work runs in the
 * image-service (BullMQ jobs); images travel through the shared image store, never through NATS.
 */
@Controller('v1/images')
export class ImagesController {
  constructor(
    @Inject(ModelGateway) private readonly gateway: ModelGateway,
    @Inject(ImageDelivery) private readonly delivery: ImageDelivery,
  ) {}

  @Post('generations')
  @HttpCode(200)
  generations(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.imageGenerations, req, reply, req.body, (data) =>
      this.delivery.present(data),
    );
  }

  @Post('edits')
  @HttpCode(200)
  async edits(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    // The tier first (ModelGateway checks it too), so that a community key is not asked to upload.
    routeCaller(Routes.imageEdits, req);
    const form = await readEditForm(req);
    let refs: ImageInputRef[] = [];
    try {
      refs = await this.delivery.storeInputs(form.images);
      await this.gateway.handle(Routes.imageEdits, req, reply, { ...form.fields, images: refs }, (data) =>
        this.delivery.present(data),
      );
    } finally {
      void this.delivery.deleteInputs(refs);
    }
  }

  /** No API key: whoever holds the signed URL may fetch the image until it expires. */
  @Public()
  @Get('files/:file')
  async file(
    @Param('file') file: string,
    @Query() query: Record<string, unknown>,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const img = await this.delivery.open(file, query.expires, query.sig);
    void reply
      .header('cache-control', `private, max-age=${this.delivery.maxAge(String(query.expires))}`)
      .header('x-content-type-options', 'nosniff')
      .header('content-disposition', `inline; filename="${file}"`)
      .type(img.contentType)
      .send(img.bytes);
  }
}
