package api

import "iter"

// StreamChunk is how many values (documents, pairs, answers) one message
// of a streamed answer carries.
const StreamChunk = 1000

// SendChunked sends seq's values, converted, StreamChunk to a message; the
// first error, seq's or send's, ends it.
func SendChunked[T, M any](seq iter.Seq2[T, error], conv func(T) M, send func([]M) error) error {
	var buf []M
	for v, err := range seq {
		if err != nil {
			return err
		}
		if buf = append(buf, conv(v)); len(buf) == StreamChunk {
			if err := send(buf); err != nil {
				return err
			}
			buf = nil
		}
	}
	if len(buf) > 0 {
		return send(buf)
	}
	return nil
}
