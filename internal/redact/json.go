package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// JSONError says what is wrong with JSON that may hold secrets (a key
// ring, a config file's headers) without quoting any of it: a syntax
// error of encoding/json quotes the character it met, which may be a
// key's or a password's, so it is told by its byte offset. Field names
// and types, which hold no secret, are named; fields lists the ones an
// unknown field's message suggests instead.
func JSONError(err error, fields string) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not JSON: syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q holds a JSON %s, want %s", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "not JSON: it ends before its object does"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") + ": want " + fields
	}
	return "read JSON: " + err.Error()
}
