package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/shardq/shardq/internal/wire"
)

// checkJSON reports whether b is exactly one JSON value.
func checkJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON: more than one value")
	}
	return nil
}

// msgpackToJSON converts a msgpack payload to JSON, for handlers in other
// languages. Map keys that are not strings are printed as strings.
func msgpackToJSON(b []byte) ([]byte, error) {
	var v any
	if err := wire.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode msgpack payload: %w", err)
	}
	out, err := json.Marshal(stringKeys(v))
	if err != nil {
		return nil, fmt.Errorf("payload as JSON: %w", err)
	}
	return out, nil
}

func stringKeys(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case map[string]any:
		for k, e := range v {
			v[k] = stringKeys(e)
		}
	case []any:
		for i, e := range v {
			v[i] = stringKeys(e)
		}
	}
	return v
}
