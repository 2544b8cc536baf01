// Package sampledoc makes realistic JSON documents for the tests and
// benchmarks of compression and encryption: orders of about 1 KB whose
// field values vary, so they compress as real payloads do, not as
// repeated bytes.
package sampledoc

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

var (
	firstNames = []string{"Ada", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Donald", "Frances", "Edsger", "Radia", "Tim", "Sophie"}
	lastNames  = []string{"Lovelace", "Hopper", "Torvalds", "Hamilton", "Thompson", "Liskov", "Knuth", "Allen", "Dijkstra", "Perlman", "Berners-Lee", "Wilson"}
	cities     = []string{"Lisbon", "Osaka", "Nairobi", "Quito", "Oslo", "Austin", "Lyon", "Pune", "Tallinn", "Accra"}
	products   = []string{"Widget", "Gadget", "Sprocket", "Flange", "Gizmo", "Bracket", "Valve", "Coupler"}
	colours    = []string{"red", "blue", "graphite", "sand", "olive", "white"}
)

// Item is one line of an Order.
type Item struct {
	SKU    string  `json:"sku"`
	Name   string  `json:"name"`
	Colour string  `json:"colour"`
	Qty    int     `json:"qty"`
	Price  float64 `json:"price"`
}

// Address is where an Order goes.
type Address struct {
	Street string `json:"street"`
	City   string `json:"city"`
	Zip    string `json:"zip"`
}

// Customer places an Order.
type Customer struct {
	ID      int64   `json:"id"`
	Name    string  `json:"name"`
	Email   string  `json:"email"`
	Address Address `json:"address"`
}

// Order is a sample document.
type Order struct {
	ID        string   `json:"order_id"`
	Customer  Customer `json:"customer"`
	Items     []Item   `json:"items"`
	CreatedAt string   `json:"created_at"`
	Status    string   `json:"status"`
	Currency  string   `json:"currency"`
	Notes     string   `json:"notes"`
	Tags      []string `json:"tags"`
}

// New returns an order drawn from r.
func New(r *rand.Rand) Order {
	first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
	o := Order{
		ID: fmt.Sprintf("%08x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff),
		Customer: Customer{ID: r.Int64N(1e9), Name: first + " " + last,
			Email:   fmt.Sprintf("%s.%s%d@example.com", first, last, r.IntN(1000)),
			Address: Address{Street: fmt.Sprintf("%d %s Street", 1+r.IntN(9999), lastNames[r.IntN(len(lastNames))]), City: cities[r.IntN(len(cities))], Zip: fmt.Sprintf("%05d", r.IntN(99999))}},
		CreatedAt: time.Unix(1.7e9+r.Int64N(1e8), 0).UTC().Format(time.RFC3339),
		Status:    []string{"pending", "paid", "packed"}[r.IntN(3)],
		Currency:  []string{"EUR", "USD", "JPY"}[r.IntN(3)],
		Notes:     fmt.Sprintf("Leave at the door; ring %d times after %d:00", 1+r.IntN(3), 8+r.IntN(12)),
		Tags:      []string{"web", "priority", "gift", "repeat"}[:1+r.IntN(4)],
	}
	for range 6 + r.IntN(4) {
		o.Items = append(o.Items, Item{SKU: fmt.Sprintf("SKU-%06d", r.IntN(999999)),
			Name:   fmt.Sprintf("%s model %c%d", products[r.IntN(len(products))], 'A'+r.IntN(26), r.IntN(1000)),
			Colour: colours[r.IntN(len(colours))], Qty: 1 + r.IntN(9), Price: float64(r.IntN(100000)) / 100})
	}
	return o
}

// JSON returns an order drawn from r, as JSON: about 1 KB.
func JSON(r *rand.Rand) []byte {
	b, err := json.Marshal(New(r))
	if err != nil {
		panic(err) // an Order always marshals
	}
	return b
}
