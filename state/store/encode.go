package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// msgpackHandle is the one codec configuration of the Raft log and of
// snapshots. It is set up once here and never changed, since every server
// must encode and decode identically.
var msgpackHandle = newMsgpackHandle()

func newMsgpackHandle() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	// Free-form maps (Task.Config, NodePool.SchedulerConfiguration, ...)
	// decode as map[string]any with string keys and string values, the
	// same shape JSON decoding gives, so a job reads back as registered.
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	// Only `codec` struct tags count: by default the codec also honours
	// `json` tags, and `json:"-"` on Node.SecretID would silently drop the
	// secret from the log.
	h.TypeInfos = codec.NewTypeInfos([]string{"codec"})
	// RecursiveEmptyCheck stays off: an omitempty pointer is left out only
	// when nil, never for pointing at an empty struct, which would then
	// decode as nil (TestLogEntriesWithoutEmptyFieldsDecodeAlike).
	return h
}

// ErrMalformedCommand is returned for a log entry that cannot be decoded.
var ErrMalformedCommand = errors.New("malformed command")

// encodeBuffers holds the buffers Encode writes into before copying the
// entry out at its exact size: a buffer grown by doubling for every entry
// was half the garbage of writing a plan of a thousand allocations, and
// garbage is what the collector's cost follows.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledEncodeBuffer bounds the buffers kept for reuse, so that one
// huge entry does not pin its buffer for ever.
const maxPooledEncodeBuffer = 16 << 20

// Encode returns the log entry for a command: the type byte followed by the
// msgpack encoding of req.
func Encode(t MessageType, req any) ([]byte, error) {
	buf := encodeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledEncodeBuffer {
			buf.Reset()
			encodeBuffers.Put(buf)
		}
	}()
	buf.Reset()
	buf.WriteByte(byte(t))
	if err := codec.NewEncoder(buf, msgpackHandle).Encode(req); err != nil {
		return nil, fmt.Errorf("encode command %d: %w", t, err)
	}
	return bytes.Clone(buf.Bytes()), nil
}

// DecodeCommand splits a log entry into its type (without the
// IgnoreUnknownTypeFlag bit) and a pointer to its decoded request, e.g. a
// *JobRegisterRequest. An unknown type gives an error wrapping
// ErrUnknownCommand, whatever the flag says: skipping is the caller's call.
func DecodeCommand(data []byte) (MessageType, any, error) {
	if len(data) == 0 {
		return 0, nil, fmt.Errorf("empty log entry: %w", ErrMalformedCommand)
	}
	t := MessageType(data[0]) &^ IgnoreUnknownTypeFlag
	cmd, ok := lookupCommand(t)
	if !ok {
		return t, nil, fmt.Errorf("command type %d: %w", t, ErrUnknownCommand)
	}
	req := cmd.newReq()
	if err := Decode(data[1:], req); err != nil {
		return t, nil, fmt.Errorf("command type %d: %w: %w", t, ErrMalformedCommand, err)
	}
	return t, req, nil
}

// Decode decodes msgpack bytes written with the store's codec into out, a
// pointer.
func Decode(buf []byte, out any) error {
	return codec.NewDecoderBytes(buf, msgpackHandle).Decode(out)
}

// newStreamEncoder returns an encoder writing a stream of msgpack values.
func newStreamEncoder(w io.Writer) *codec.Encoder {
	return codec.NewEncoder(w, msgpackHandle)
}

// newStreamDecoder returns a decoder reading a stream of msgpack values.
func newStreamDecoder(r io.Reader) *codec.Decoder {
	return codec.NewDecoder(r, msgpackHandle)
}

// logCodec is the log's codec as the memory machinery takes it
// (packed.Codec), for the blobs of allocation records.
type logCodec struct{}

// Encode implements packed.Codec.
func (logCodec) Encode(w io.Writer, v any) error { return newStreamEncoder(w).Encode(v) }

// Decode implements packed.Codec.
func (logCodec) Decode(b []byte, out any) error { return Decode(b, out) }
