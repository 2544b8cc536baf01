package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrPayloadMismatch reports a payload that decodes but fills nothing of
// the value it is decoded into: an object none of whose keys names a
// field of the target struct (say JSON keys matched against msgpack tags).
// Decoding it anyway would hand a handler zero values and lose the data.
var ErrPayloadMismatch = errors.New("payload does not fit the target type")

// DecodePayload decodes a task's payload into v: msgpack, as queue.NewTask
// encodes it, by msgpack tags, else json tags, else field names (a payload
// 0.1.0 wrote, keyed by msgpack tags and field names, decodes as it was
// written: UnmarshalPayload); or, for a raw payload (queue.NewRawTask,
// shardq enqueue --json, producers outside Go), JSON as encoding/json
// decodes it: by json tags, untagged fields by name without regard to
// case; a JSON object that fits no field that way
// is tried once more by msgpack tags, for structs tagged only for msgpack.
// Keys the target lacks are ignored, as encoding/json does, but an object
// none of whose keys fits a field of a struct target is
// ErrPayloadMismatch. The error says which encoding it tried, into what;
// callers add the task.
func DecodePayload(payload []byte, raw bool, v any) error {
	if raw {
		if err := json.Unmarshal(payload, v); err != nil {
			return fmt.Errorf("has a raw payload, read as JSON into %T: %w", v, err)
		}
		keys := unfit(v, jsonKeys(payload), func(k string, val []byte) error {
			return strictJSON(k, val, v)
		})
		if keys == nil {
			return nil
		}
		if b, err := jsonAsMsgpack(payload); err == nil && Unmarshal(b, v) == nil &&
			unfit(v, msgpackKeys(b), func(k string, val []byte) error { return fitsKey(k, val, v, "") }) == nil {
			return nil // it fits by msgpack tags
		}
		return mismatch("JSON", v, keys)
	}
	payload, err := Normalize(payload)
	if err != nil {
		return fmt.Errorf("decode msgpack payload into %T: %w", v, err)
	}
	if err := decodePayload(payload, v); err != nil {
		return fmt.Errorf("decode msgpack payload into %T: %w", v, err)
	}
	if keys := unfit(v, msgpackKeys(payload), func(k string, val []byte) error {
		if fitsKey(k, val, v, PayloadTag) == nil {
			return nil
		}
		return fitsKey(k, val, v, "")
	}); keys != nil {
		return mismatch("msgpack", v, keys)
	}
	return nil
}

func mismatch(enc string, v any, keys []string) error {
	sort.Strings(keys)
	return fmt.Errorf("%w: %s keys %s match no field of %T", ErrPayloadMismatch, enc, strings.Join(keys, ", "), v)
}

// unfit returns the payload object's keys when v points to a struct that
// decoding left zero although the object has keys, none of which fits a
// field (fits reports an unknown field); else nil. The check runs only on
// a zero result, so a payload that filled anything costs nothing more.
func unfit(v any, obj map[string][]byte, fits func(k string, val []byte) error) []string {
	if len(obj) == 0 {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	e := rv.Elem()
	for e.Kind() == reflect.Pointer {
		if e.IsNil() {
			return nil
		}
		e = e.Elem()
	}
	if e.Kind() != reflect.Struct || !e.IsZero() {
		return nil
	}
	keys := make([]string, 0, len(obj))
	for k, val := range obj {
		if fits(k, val) == nil {
			return nil
		}
		keys = append(keys, k)
	}
	return keys
}

// jsonKeys returns the members of a JSON object, or nil for any other
// value.
func jsonKeys(b []byte) map[string][]byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// msgpackKeys returns the string-keyed entries of a msgpack map, or nil
// for any other value. b is what Normalize returned.
func msgpackKeys(b []byte) map[string][]byte {
	var m map[string]msgpack.RawMessage
	if unmarshalChecked(b, &m) != nil {
		return nil
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// fresh returns a new zero value of the type v points to.
func fresh(v any) any { return reflect.New(reflect.TypeOf(v).Elem()).Interface() }

// strictJSON decodes the one-member object {k: val} into a fresh value of
// v's type, refusing unknown fields: nil means k names a field.
func strictJSON(k string, val []byte, v any) error {
	obj, err := json.Marshal(map[string]json.RawMessage{k: val})
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(obj))
	d.DisallowUnknownFields()
	return d.Decode(fresh(v))
}

// jsonAsMsgpack re-encodes a JSON value as msgpack, whole numbers as
// integers so they decode into int fields.
func jsonAsMsgpack(b []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return msgpack.Marshal(numbers(v))
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
