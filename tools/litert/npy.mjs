// Reading and writing NumPy .npy files (format 1.0/2.0/3.0, C order, little
// endian) for the LiteRT runners: the dtypes LiteRT.js tensors carry
// (float32, int32, uint8) plus int8/int64/float64 so expectations can hold
// what a model outputs after conversion.
import fs from 'node:fs';

const DESCR = {
  '<f4': Float32Array, '<i4': Int32Array, '|u1': Uint8Array, '|i1': Int8Array,
  '<i8': BigInt64Array, '<f8': Float64Array, '|b1': Uint8Array,
};
const DTYPE_OF = {float32: '<f4', int32: '<i4', uint8: '|u1', int8: '|i1'};

export function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') {
    throw new Error(`${path}: not a .npy file`);
  }
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  if (start + headerLen > buf.length) throw new Error(`${path}: truncated header`);
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (!descr || !fortran || shapeText === undefined) {
    throw new Error(`${path}: cannot parse header ${header}`);
  }
  if (fortran === 'True') throw new Error(`${path}: Fortran order is not supported`);
  const Ctor = DESCR[descr];
  if (!Ctor) throw new Error(`${path}: dtype ${descr} is not supported`);
  const shape = shapeText.split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  if (offset + count * Ctor.BYTES_PER_ELEMENT > buf.length) {
    throw new Error(`${path}: ${count} elements do not fit in the file`);
  }
  const bytes = buf.subarray(offset, offset + count * Ctor.BYTES_PER_ELEMENT);
  const data = new Ctor(count);
  new Uint8Array(data.buffer).set(bytes);
  return {descr, shape, data};
}

export function writeNpy(path, data, shape, dtype) {
  const descr = DTYPE_OF[dtype];
  if (!descr) throw new Error(`writeNpy: dtype ${dtype} is not supported`);
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}
