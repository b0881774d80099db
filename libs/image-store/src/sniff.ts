/** Image types accepted as input (edits) and produced as output, recognised by their first bytes. */
export type ImageMime = 'image/png' | 'image/jpeg' | 'image/webp';

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The type of an image by its content (magic bytes), or null when it is none of PNG, JPEG, WebP. */
export function sniffImageType(bytes: Uint8Array): ImageMime | null {
  if (bytes.length >= 8 && PNG_SIGNATURE.every((b, i) => bytes[i] === b)) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') {
    return 'image/webp';
  }
  return null;
}

/** File extension of an image type. */
export function extensionOf(contentType: string): string {
  switch (contentType) {
    case 'image/jpeg':
      return 'jpg';
    case 'image/webp':
      return 'webp';
    default:
      return 'png';
  }
}

/** Width and height from a PNG's IHDR chunk, or null when `bytes` is not a PNG. */
export function pngDimensions(bytes: Uint8Array): { width: number; height: number } | null {
  if (sniffImageType(bytes) !== 'image/png' || bytes.length < 24 || ascii(bytes, 12, 16) !== 'IHDR') {
    return null;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

function ascii(bytes: Uint8Array, from: number, to: number): string {
  return String.fromCharCode(...bytes.subarray(from, to));
}
