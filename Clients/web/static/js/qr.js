// A QR code (ISO/IEC 18004) of a text in byte mode, in the smallest version (1 to 40) that holds it at
// error correction level M (15% of the code may be lost), or L when asked; drawn on a canvas for a phone
// to read off a projector.

const LEVELS = {
  // Format bits, then per version (1-40): error correction codewords per block, and blocks.
  L: {
    bits: 1,
    ecc: [7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
    blocks: [1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
  },
  M: {
    bits: 0,
    ecc: [10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
    blocks: [1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
  },
};

const MASKS = [
  (x, y) => (x + y) % 2 === 0,
  (x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => (x * y) % 2 + (x * y) % 3 === 0,
  (x, y) => ((x * y) % 2 + (x * y) % 3) % 2 === 0,
  (x, y) => ((x + y) % 2 + (x * y) % 3) % 2 === 0,
];

/** Modules that carry data (neither function patterns nor format and version information). */
function rawModules(version) {
  let count = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const aligned = Math.floor(version / 7) + 2;
    count -= (25 * aligned - 10) * aligned - 55;
    if (version >= 7) count -= 36;
  }
  return count;
}

function dataCodewords(version, level) {
  return Math.floor(rawModules(version) / 8) - level.ecc[version - 1] * level.blocks[version - 1];
}

function alignmentPositions(version, size) {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = version === 32 ? 26 : Math.ceil((size - 13) / (count * 2 - 2)) * 2;
  const positions = [6];
  for (let position = size - 7; positions.length < count; position -= step) positions.splice(1, 0, position);
  return positions;
}

/** Multiplication in GF(2^8) modulo x^8 + x^4 + x^3 + x^2 + 1. */
function multiply(a, b) {
  let product = 0;
  for (let bit = 7; bit >= 0; bit--) {
    product = (product << 1) ^ ((product >>> 7) * 0x11d);
    product ^= ((b >>> bit) & 1) * a;
  }
  return product;
}

/** The Reed-Solomon generator of this degree, its leading 1 left out. */
function generator(degree) {
  const coefficients = new Array(degree).fill(0);
  coefficients[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      coefficients[j] = multiply(coefficients[j], root);
      if (j + 1 < degree) coefficients[j] ^= coefficients[j + 1];
    }
    root = multiply(root, 2);
  }
  return coefficients;
}

function remainder(data, divisor) {
  const result = new Array(divisor.length).fill(0);
  for (const byte of data) {
    const factor = byte ^ result.shift();
    result.push(0);
    divisor.forEach((coefficient, i) => { result[i] ^= multiply(coefficient, factor); });
  }
  return result;
}

/** The data codewords split into blocks, each followed by its error correction, interleaved. */
function interleaved(data, version, level) {
  const blockCount = level.blocks[version - 1];
  const eccLength = level.ecc[version - 1];
  const total = Math.floor(rawModules(version) / 8);
  const shortBlocks = blockCount - (total % blockCount);
  const shortLength = Math.floor(total / blockCount);
  const divisor = generator(eccLength);
  const blocks = [];
  for (let i = 0, taken = 0; i < blockCount; i++) {
    const block = data.slice(taken, taken + shortLength - eccLength + (i < shortBlocks ? 0 : 1));
    taken += block.length;
    const ecc = remainder(block, divisor);
    if (i < shortBlocks) block.push(0);
    blocks.push(block.concat(ecc));
  }
  const result = [];
  for (let i = 0; i < blocks[0].length; i++) {
    blocks.forEach((block, j) => {
      if (i !== shortLength - eccLength || j >= shortBlocks) result.push(block[i]);
    });
  }
  return result;
}

/** Bits before the data: byte mode and its length, after an ECI that says UTF-8 when the text is not ASCII. */
const headerBits = (bytes, version) => (bytes.some((byte) => byte > 0x7f) ? 12 : 0) + 4 + (version < 10 ? 8 : 16);

/** The bit stream of the text in byte mode, terminated and padded to the version's capacity. */
function codewords(bytes, version, level) {
  const bits = [];
  const put = (value, length) => { for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1); };
  if (bytes.some((byte) => byte > 0x7f)) {
    put(7, 4);
    put(26, 8);
  }
  put(4, 4);
  put(bytes.length, version < 10 ? 8 : 16);
  for (const byte of bytes) put(byte, 8);
  const capacity = dataCodewords(version, level) * 8;
  put(0, Math.min(4, capacity - bits.length));
  put(0, (8 - (bits.length % 8)) % 8);
  for (let pad = 0xec; bits.length < capacity; pad ^= 0xec ^ 0x11) put(pad, 8);
  const data = [];
  for (let i = 0; i < bits.length; i += 8) data.push(bits.slice(i, i + 8).reduce((byte, bit) => (byte << 1) | bit, 0));
  return data;
}

/** The penalty the standard gives a masked symbol: long runs, 2×2 blocks, finder look-alikes, imbalance. */
function penalty(modules) {
  const size = modules.length;
  let score = 0;
  const lines = [];
  for (let i = 0; i < size; i++) lines.push(modules[i], modules.map((row) => row[i]));
  for (const line of lines) {
    let run = 1;
    for (let i = 1; i <= size; i++) {
      if (i < size && line[i] === line[i - 1]) { run += 1; continue; }
      if (run >= 5) score += run - 2;
      run = 1;
    }
    const padded = `0000${line.map((dark) => (dark ? '1' : '0')).join('')}0000`;
    score += 40 * ((padded.match(/(?=00001011101)/g)?.length ?? 0) + (padded.match(/(?=10111010000)/g)?.length ?? 0));
  }
  for (let y = 0; y + 1 < size; y++) {
    for (let x = 0; x + 1 < size; x++) {
      const dark = modules[y][x];
      if (modules[y][x + 1] === dark && modules[y + 1][x] === dark && modules[y + 1][x + 1] === dark) score += 3;
    }
  }
  const darkCount = modules.reduce((sum, row) => sum + row.filter(Boolean).length, 0);
  score += 10 * Math.floor(Math.abs(darkCount * 20 - size * size * 10) / (size * size));
  return score;
}

/** The symbol for `text`: a square of booleans (true is dark), without the quiet zone. */
export function encode(text, { level: levelName = 'M', minVersion = 1 } = {}) {
  const level = LEVELS[levelName];
  const bytes = [...new TextEncoder().encode(text)];
  let version = minVersion;
  while (version <= 40 && headerBits(bytes, version) + bytes.length * 8 > dataCodewords(version, level) * 8) version += 1;
  if (version > 40) throw new RangeError('The text is too long for a QR code.');
  const size = version * 4 + 17;
  const modules = Array.from({ length: size }, () => new Array(size).fill(false));
  const reserved = Array.from({ length: size }, () => new Array(size).fill(false));
  const set = (x, y, dark) => { modules[y][x] = dark; reserved[y][x] = true; };

  for (let i = 0; i < size; i++) {
    set(6, i, i % 2 === 0);
    set(i, 6, i % 2 === 0);
  }
  for (const [cx, cy] of [[3, 3], [size - 4, 3], [3, size - 4]]) {
    for (let dy = -4; dy <= 4; dy++) {
      for (let dx = -4; dx <= 4; dx++) {
        const x = cx + dx;
        const y = cy + dy;
        const distance = Math.max(Math.abs(dx), Math.abs(dy));
        if (x >= 0 && x < size && y >= 0 && y < size) set(x, y, distance !== 2 && distance !== 4);
      }
    }
  }
  const positions = alignmentPositions(version, size);
  const last = positions.length - 1;
  positions.forEach((cx, i) => positions.forEach((cy, j) => {
    if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) return;
    for (let dy = -2; dy <= 2; dy++) {
      for (let dx = -2; dx <= 2; dx++) set(cx + dx, cy + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
    }
  }));
  const drawFormat = (mask) => {
    const data = (level.bits << 3) | mask;
    let rest = data;
    for (let i = 0; i < 10; i++) rest = (rest << 1) ^ ((rest >>> 9) * 0x537);
    const bits = ((data << 10) | rest) ^ 0x5412;
    const bit = (i) => ((bits >>> i) & 1) === 1;
    for (let i = 0; i <= 5; i++) set(8, i, bit(i));
    set(8, 7, bit(6));
    set(8, 8, bit(7));
    set(7, 8, bit(8));
    for (let i = 9; i < 15; i++) set(14 - i, 8, bit(i));
    for (let i = 0; i < 8; i++) set(size - 1 - i, 8, bit(i));
    for (let i = 8; i < 15; i++) set(8, size - 15 + i, bit(i));
    set(8, size - 8, true);
  };
  drawFormat(0);
  if (version >= 7) {
    let rest = version;
    for (let i = 0; i < 12; i++) rest = (rest << 1) ^ ((rest >>> 11) * 0x1f25);
    const bits = (version << 12) | rest;
    for (let i = 0; i < 18; i++) {
      const dark = ((bits >>> i) & 1) === 1;
      const a = size - 11 + (i % 3);
      const b = Math.floor(i / 3);
      set(a, b, dark);
      set(b, a, dark);
    }
  }

  const stream = interleaved(codewords(bytes, version, level), version, level);
  let index = 0;
  for (let right = size - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    for (let vertical = 0; vertical < size; vertical++) {
      for (let j = 0; j < 2; j++) {
        const x = right - j;
        const upward = ((right + 1) & 2) === 0;
        const y = upward ? size - 1 - vertical : vertical;
        if (reserved[y][x] || index >= stream.length * 8) continue;
        modules[y][x] = ((stream[index >>> 3] >>> (7 - (index & 7))) & 1) === 1;
        index += 1;
      }
    }
  }

  const masked = (mask) => {
    drawFormat(mask);
    return modules.map((row, y) => row.map((dark, x) => (reserved[y][x] ? dark : dark !== MASKS[mask](x, y))));
  };
  let best = null;
  let bestScore = Infinity;
  for (let mask = 0; mask < MASKS.length; mask++) {
    const candidate = masked(mask);
    const score = penalty(candidate);
    if (score < bestScore) {
      best = mask;
      bestScore = score;
    }
  }
  return masked(best);
}

/** Draws the symbol with its 4-module quiet zone, `scale` canvas pixels a module. */
export function drawOn(canvas, modules, scale) {
  const side = modules.length + 8;
  canvas.width = side * scale;
  canvas.height = side * scale;
  const context = canvas.getContext('2d');
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = '#000';
  modules.forEach((row, y) => row.forEach((dark, x) => {
    if (dark) context.fillRect((x + 4) * scale, (y + 4) * scale, scale, scale);
  }));
}
