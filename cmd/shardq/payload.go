package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// jsonValue decodes one JSON value into plain Go values msgpack encodes as
// Go handlers expect: whole numbers become integers (so they decode into
// int fields), other numbers float64.
func jsonValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: more than one value")
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}

// msgpackToJSON converts a msgpack payload to JSON, for handlers in other
// languages. Map keys that are not strings are printed as strings.
func msgpackToJSON(b []byte) ([]byte, error) {
	var v any
	if err := msgpack.Unmarshal(b, &v); err != nil {
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
