package ordersync

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// wantMessages are the exact messages of each rule, as the service writes
// them in each language. maxLength takes the limit.
var wantMessages = map[Language]map[string]string{
	English: {
		"required":    "The field is required.",
		"maxLength":   "The field must be at most %d characters long.",
		"oneMethod":   "Provide either lineItems or amount, not both and not neither.",
		"oneProduct":  "Provide either sku or product, not both and not neither.",
		"positive":    "The value must be greater than 0.",
		"minQuantity": "The quantity must be at least 1.",
		"url":         "The value must be an absolute http or https URL.",
	},
	Spanish: {
		"required":    "El campo es obligatorio.",
		"maxLength":   "El campo debe tener como máximo %d caracteres.",
		"oneMethod":   "Indique lineItems o amount, no ambos ni ninguno.",
		"oneProduct":  "Indique sku o product, no ambos ni ninguno.",
		"positive":    "El valor debe ser mayor que 0.",
		"minQuantity": "La cantidad debe ser al menos 1.",
		"url":         "El valor debe ser una URL http o https absoluta.",
	},
}

// message renders a rule key such as "maxLength:255" in lang.
func message(lang Language, key string) string {
	rule, arg, _ := strings.Cut(key, ":")
	msg := wantMessages[lang][rule]
	if arg != "" {
		var n int
		fmt.Sscan(arg, &n)
		msg = fmt.Sprintf(msg, n)
	}
	return msg
}

// validParams is a Method 1 request that breaks no rule; cases change one
// thing.
func validParams() PaymentLinkParams {
	price := MustAmount("6.50")
	exp := 60
	yes := true
	return PaymentLinkParams{
		LineItems: []LineItemParams{
			{SKU: "COMBO-01", Quantity: 2},
			{Product: &ProductParams{Name: "Refresco", Price: &price, ImageURL: "https://cdn.example.test/r.png", RequiresShipping: &yes}, Quantity: 1},
		},
		OrderReference:    "ped_7f3c2a91",
		OrderName:         "Pedido 1042",
		OrderDescription:  "Mostrador",
		SuccessURL:        "https://shop.example.test/gracias",
		CancelURL:         "http://shop.example.test/carrito",
		LocationCode:      "SV-01",
		Metadata:          []MetadataEntry{{Name: "numero_orden", Value: "A-1042"}, {Name: "vacío", Value: ""}},
		ExpirationMinutes: &exp,
	}
}

func amountPtr(s string) *Amount {
	a := MustAmount(s)
	return &a
}

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *PaymentLinkParams)
	}{
		{"method 1", func(p *PaymentLinkParams) {}},
		{"method 2", func(p *PaymentLinkParams) { p.LineItems, p.Amount = nil, amountPtr("12.50") }},
		{"only required fields", func(p *PaymentLinkParams) {
			*p = PaymentLinkParams{Amount: amountPtr("0.01")}
		}},
		{"limits exactly", func(p *PaymentLinkParams) {
			p.OrderReference = strings.Repeat("r", MaxOrderReference)
			p.OrderName = strings.Repeat("ñ", MaxOrderName) // characters, not bytes
			p.OrderDescription = strings.Repeat("d", MaxOrderDescription)
			p.LineItems[1].Product.ImageURL = "https://cdn.example.test/" + strings.Repeat("i", MaxImageURL-len("https://cdn.example.test/"))
		}},
		{"expiration of one minute", func(p *PaymentLinkParams) { one := 1; p.ExpirationMinutes = &one }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validParams()
			tt.change(&p)
			for _, lang := range []Language{English, Spanish} {
				if err := p.Validate(lang); err != nil {
					t.Errorf("Validate(%s) = %v", lang, err)
				}
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *PaymentLinkParams)
		want   map[string][]string // field → rule keys
	}{
		{"neither method", func(p *PaymentLinkParams) { p.LineItems = nil },
			map[string][]string{"lineItems": {"oneMethod"}}},
		{"both methods", func(p *PaymentLinkParams) { p.Amount = amountPtr("5.00") },
			map[string][]string{"lineItems": {"oneMethod"}, "amount": {"oneMethod"}}},
		{"amount zero", func(p *PaymentLinkParams) { p.LineItems, p.Amount = nil, amountPtr("0.00") },
			map[string][]string{"amount": {"positive"}}},
		{"amount negative", func(p *PaymentLinkParams) { p.LineItems, p.Amount = nil, amountPtr("-1") },
			map[string][]string{"amount": {"positive"}}},
		{"empty line item list and no amount", func(p *PaymentLinkParams) { p.LineItems = []LineItemParams{} },
			map[string][]string{"lineItems": {"oneMethod"}}},
		{"sku and product", func(p *PaymentLinkParams) { p.LineItems[1].SKU = "X" },
			map[string][]string{"lineItems[1]": {"oneProduct"}}},
		{"neither sku nor product", func(p *PaymentLinkParams) { p.LineItems[0].SKU = "" },
			map[string][]string{"lineItems[0]": {"oneProduct"}}},
		{"blank sku", func(p *PaymentLinkParams) { p.LineItems[0].SKU = "  " },
			map[string][]string{"lineItems[0]": {"oneProduct"}}},
		{"product without name", func(p *PaymentLinkParams) { p.LineItems[1].Product.Name = " " },
			map[string][]string{"lineItems[1].product.name": {"required"}}},
		{"product without price", func(p *PaymentLinkParams) { p.LineItems[1].Product.Price = nil },
			map[string][]string{"lineItems[1].product.price": {"required"}}},
		{"product price zero", func(p *PaymentLinkParams) { p.LineItems[1].Product.Price = amountPtr("0") },
			map[string][]string{"lineItems[1].product.price": {"positive"}}},
		{"product image not a URL", func(p *PaymentLinkParams) { p.LineItems[1].Product.ImageURL = "combo.png" },
			map[string][]string{"lineItems[1].product.imageUrl": {"url"}}},
		{"product image too long", func(p *PaymentLinkParams) {
			p.LineItems[1].Product.ImageURL = "https://cdn.example.test/" + strings.Repeat("i", MaxImageURL)
		}, map[string][]string{"lineItems[1].product.imageUrl": {"maxLength:512"}}},
		{"quantity zero", func(p *PaymentLinkParams) { p.LineItems[0].Quantity = 0 },
			map[string][]string{"lineItems[0].quantity": {"minQuantity"}}},
		{"quantity negative", func(p *PaymentLinkParams) { p.LineItems[1].Quantity = -3 },
			map[string][]string{"lineItems[1].quantity": {"minQuantity"}}},
		{"orderReference too long", func(p *PaymentLinkParams) { p.OrderReference = strings.Repeat("r", MaxOrderReference+1) },
			map[string][]string{"orderReference": {"maxLength:255"}}},
		{"orderName too long", func(p *PaymentLinkParams) { p.OrderName = strings.Repeat("ñ", MaxOrderName+1) },
			map[string][]string{"orderName": {"maxLength:255"}}},
		{"orderDescription too long", func(p *PaymentLinkParams) { p.OrderDescription = strings.Repeat("d", MaxOrderDescription+1) },
			map[string][]string{"orderDescription": {"maxLength:2048"}}},
		{"successUrl relative", func(p *PaymentLinkParams) { p.SuccessURL = "/gracias" },
			map[string][]string{"successUrl": {"url"}}},
		{"successUrl ftp", func(p *PaymentLinkParams) { p.SuccessURL = "ftp://shop.example.test/" },
			map[string][]string{"successUrl": {"url"}}},
		{"cancelUrl without host", func(p *PaymentLinkParams) { p.CancelURL = "https://" },
			map[string][]string{"cancelUrl": {"url"}}},
		{"cancelUrl unparsable", func(p *PaymentLinkParams) { p.CancelURL = "http://[::1" },
			map[string][]string{"cancelUrl": {"url"}}},
		{"expirationMinutes zero", func(p *PaymentLinkParams) { zero := 0; p.ExpirationMinutes = &zero },
			map[string][]string{"expirationMinutes": {"positive"}}},
		{"expirationMinutes negative", func(p *PaymentLinkParams) { neg := -5; p.ExpirationMinutes = &neg },
			map[string][]string{"expirationMinutes": {"positive"}}},
		{"metadata without name", func(p *PaymentLinkParams) { p.Metadata[1].Name = "" },
			map[string][]string{"metadata[1].name": {"required"}}},
		{"everything at once", func(p *PaymentLinkParams) {
			p.Amount = amountPtr("-1")
			p.LineItems[0].Quantity = 0
			p.LineItems[1].Product.Name = ""
			p.LineItems[1].Product.ImageURL = "x"
			p.SuccessURL = "x"
			p.Metadata[0].Name = " "
		}, map[string][]string{
			"lineItems":                     {"oneMethod"},
			"amount":                        {"oneMethod"},
			"lineItems[0].quantity":         {"minQuantity"},
			"lineItems[1].product.name":     {"required"},
			"lineItems[1].product.imageUrl": {"url"},
			"successUrl":                    {"url"},
			"metadata[0].name":              {"required"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, lang := range []Language{English, Spanish} {
				p := validParams()
				tt.change(&p)
				err := p.Validate(lang)
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Validate(%s) = %v, want a *ValidationError", lang, err)
				}
				want := map[string][]string{}
				for field, keys := range tt.want {
					for _, k := range keys {
						want[field] = append(want[field], message(lang, k))
					}
				}
				if !reflect.DeepEqual(ve.Fields, want) {
					t.Errorf("Validate(%s) fields = %q, want %q", lang, ve.Fields, want)
				}
				wantTitle := map[Language]string{English: "One or more validation errors occurred.", Spanish: "Se produjeron uno o más errores de validación."}[lang]
				if ve.Title != wantTitle {
					t.Errorf("title = %q", ve.Title)
				}
				for _, f := range ve.FieldNames() {
					if !strings.Contains(ve.Error(), f+": ") {
						t.Errorf("message %q does not name %s", ve.Error(), f)
					}
				}
			}
		})
	}
}

func TestValidateUnknownLanguageIsEnglish(t *testing.T) {
	p := PaymentLinkParams{}
	var ve *ValidationError
	if err := p.Validate("fr"); !errors.As(err, &ve) || ve.Fields["lineItems"][0] != wantMessages[English]["oneMethod"] {
		t.Errorf("Validate(fr) = %v", err)
	}
}

func TestValidationErrorMessage(t *testing.T) {
	ve := &ValidationError{Title: "t", Fields: map[string][]string{"b": {"m1", "m2"}, "a": {"m"}}}
	if got := ve.Error(); got != "invalid request: a: m, b: m1; m2" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&ValidationError{Title: "Bad Request"}).Error(); got != "invalid request: Bad Request" {
		t.Errorf("Error() = %q", got)
	}
}

// TestValidateParamsFixtures checks the recorded checkout requests: the
// valid ones pass, the invalid ones name their fields.
func TestValidateParamsFixtures(t *testing.T) {
	tests := []struct {
		file   string
		fields []string
	}{
		{"method1-sku-and-product.json", nil},
		{"method2-amount.json", nil},
		{"invalid-both-methods.json", []string{"amount", "lineItems"}},
		{"invalid-neither-method.json", []string{"lineItems"}},
		{"invalid-everything.json", []string{
			"cancelUrl", "expirationMinutes", "lineItems[0]", "lineItems[0].product.imageUrl", "lineItems[0].product.name",
			"lineItems[0].product.price", "lineItems[0].quantity", "lineItems[1]", "metadata[0].name", "successUrl",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var p PaymentLinkParams
			if err := json.Unmarshal(readTestdata(t, filepath.Join("params", tt.file)), &p); err != nil {
				t.Fatalf("decode: %v", err)
			}
			err := p.Validate(Spanish)
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v", err)
			}
			if got := ve.FieldNames(); !reflect.DeepEqual(got, tt.fields) {
				t.Errorf("fields = %q, want %q", got, tt.fields)
			}
		})
	}
}

// FuzzValidate: params decoded from any JSON validate without panicking, in
// the same fields in both languages, and params that pass marshal into a
// request that decodes and passes again.
func FuzzValidate(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "params"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readTestdata(f, filepath.Join("params", e.Name())))
	}
	for _, s := range []string{`{}`, `{"amount":null}`, `{"lineItems":[{}]}`, `{"lineItems":[null]}`, `{"metadata":[null]}`, `{"amount":"1e3","expirationMinutes":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var p PaymentLinkParams
		if json.Unmarshal(doc, &p) != nil {
			return
		}
		errEn, errEs := p.Validate(English), p.Validate(Spanish)
		if (errEn == nil) != (errEs == nil) {
			t.Fatalf("English %v, Spanish %v", errEn, errEs)
		}
		if errEn != nil {
			var en, es *ValidationError
			if !errors.As(errEn, &en) || !errors.As(errEs, &es) {
				t.Fatalf("not a *ValidationError: %v", errEn)
			}
			if !reflect.DeepEqual(en.FieldNames(), es.FieldNames()) || len(en.Fields) == 0 {
				t.Fatalf("fields differ: %v / %v", en.FieldNames(), es.FieldNames())
			}
			return
		}
		body, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("valid params do not marshal: %v", err)
		}
		var back PaymentLinkParams
		if err := json.Unmarshal(body, &back); err != nil {
			t.Fatalf("request %s does not decode: %v", body, err)
		}
		if err := back.Validate(English); err != nil {
			t.Fatalf("request %s no longer valid: %v", body, err)
		}
	})
}
