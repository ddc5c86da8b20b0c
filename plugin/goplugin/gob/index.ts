// Public API of the gob codec: a push-fed stream decoder, a schema-driven encoder and Go's time.Time layout.

export { defaultGobDecoderLimits, GobDecoder, type GobDecoderLimits } from './decoder.ts';
export { GobEncoder } from './encoder.ts';
export {
  civilFromDays,
  decodeGoTime,
  encodeGoTime,
  type GoTime,
  goTimeFromDate,
  goTimeNow,
  goTimeToRFC3339,
} from './time.ts';
export {
  type GobComplex,
  GobError,
  type GobField,
  type GobIgnoredFields,
  GobInterface,
  GobOpaque,
  type GobSchema,
  type GobStruct,
  type GobValue,
} from './types.ts';
