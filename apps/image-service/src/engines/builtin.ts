import { comfyuiEngineFactory } from './comfyui.js';
import { openaiImagesEngineFactory } from './openai-images.js';
import type { ImageEngineFactory } from './registry.js';
import { simulatorImageEngineFactory } from './simulator.js';

/**
 * The engine types of the image service, by catalog `engine.type`: `openai` (an OpenAI-compatible
 * images API such as LocalAI), `comfyui` (ComfyUI with a workflow template) and `simulator` (a test
 * double that renders deterministic PNGs).
 */
export const builtinImageEngineFactories: readonly ImageEngineFactory[] = [
  openaiImagesEngineFactory,
  comfyuiEngineFactory,
  simulatorImageEngineFactory,
];
