package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
)

func newLinksCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "links", Short: "Create payment links through ordersync, so it follows every order"}
	cmd.AddCommand(newLinksCreateCommand())
	return cmd
}

func newLinksCreateCommand() *cobra.Command {
	var (
		items           []string
		amount, account string
		metadata        []string
		expiration      int
		asJSON          bool
		params          ordersync.PaymentLinkParams
	)
	cmd := &cobra.Command{
		Use:   "create (--item ... | --amount N) [flags]",
		Short: "Create a payment link upstream and record its order in the mirror",
		Long: `Method 1, line items: one --item per line, either a portal product
  --item sku=SKU,qty=2
or a one-time product
  --item name=Combo,price=6.50,qty=2[,image=https://…][,shipping=true]
Method 2, one amount: --amount 25.00

The order is recorded in the mirror at once and fetched, so later webhooks
that carry only its orderId resolve.`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror|app.ScopeUpstream)
	f := cmd.Flags()
	f.StringArrayVar(&items, "item", nil, "a line item (repeat): sku=…,qty=… or name=…,price=…,qty=…[,image=…][,shipping=true]")
	f.StringVar(&amount, "amount", "", "Method 2: the amount to charge")
	f.StringVar(&params.OrderReference, "reference", "", "your order reference (≤255)")
	f.StringVar(&params.OrderName, "name", "", "order name (≤255, default PaymentLink Order)")
	f.StringVar(&params.OrderDescription, "description", "", "order description (≤2048)")
	f.StringVar(&params.SuccessURL, "success-url", "", "where the buyer goes after paying")
	f.StringVar(&params.CancelURL, "cancel-url", "", "where the buyer goes after cancelling")
	f.StringVar(&params.LocationCode, "location", "", "location code")
	f.StringArrayVar(&metadata, "metadata", nil, "metadata entry name=value (repeat)")
	f.IntVar(&expiration, "expiration-minutes", 0, "minutes until the link expires (default 1440)")
	f.StringVar(&account, "account", ordersync.DefaultAccount, "merchant account")
	f.BoolVar(&asJSON, "json", false, "print the creation result as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if (len(items) > 0) == (amount != "") {
			return errors.New("give one or more --item (Method 1) or --amount (Method 2), not both and not neither")
		}
		for _, s := range items {
			it, err := parseItem(s)
			if err != nil {
				return fmt.Errorf("--item %q: %w", s, err)
			}
			params.LineItems = append(params.LineItems, it)
		}
		if amount != "" {
			a, err := ordersync.ParseAmount(amount)
			if err != nil {
				return fmt.Errorf("--amount: %w", err)
			}
			params.Amount = &a
		}
		for _, m := range metadata {
			name, value, ok := strings.Cut(m, "=")
			if !ok {
				return fmt.Errorf("--metadata %q: want name=value", m)
			}
			params.Metadata = append(params.Metadata, ordersync.MetadataEntry{Name: name, Value: value})
		}
		if cmd.Flags().Changed("expiration-minutes") {
			params.ExpirationMinutes = &expiration
		}
		if err := params.Validate(ordersync.English); err != nil {
			return inFlagTerms(err)
		}
		l, err := openUpstream(cmd.Context(), flags, account)
		if err != nil {
			return err
		}
		defer l.Close()
		res, err := l.Follower().CreatePaymentLink(cmd.Context(), account, params)
		object := "order"
		if err == nil {
			object = "order " + res.OrderCode
		}
		l.audit(cmd.Context(), "payment-link.create", object, err)
		if err != nil {
			return inFlagTerms(err)
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), res)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "order %s (id %s) created and recorded\n%s\n", res.OrderCode, res.OrderID, res.PaymentLinkURL)
		return nil
	}
	return cmd
}

// parseItem reads sku=…,qty=… or name=…,price=…,qty=…[,image=…][,shipping=…].
func parseItem(s string) (ordersync.LineItemParams, error) {
	it := ordersync.LineItemParams{Quantity: 1}
	var p ordersync.ProductParams
	hasProduct := false
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return it, fmt.Errorf("%q is not key=value", kv)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "sku":
			it.SKU = v
		case "qty", "quantity":
			n, err := strconv.Atoi(v)
			if err != nil {
				return it, fmt.Errorf("qty %q is not a whole number", v)
			}
			it.Quantity = n
		case "name":
			p.Name, hasProduct = v, true
		case "price":
			a, err := ordersync.ParseAmount(v)
			if err != nil {
				return it, err
			}
			p.Price, hasProduct = &a, true
		case "image":
			p.ImageURL, hasProduct = v, true
		case "shipping":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return it, fmt.Errorf("shipping %q is not true or false", v)
			}
			p.RequiresShipping, hasProduct = &b, true
		default:
			return it, fmt.Errorf("unknown key %q (want sku, qty, name, price, image, shipping)", k)
		}
	}
	switch {
	case hasProduct && it.SKU != "":
		return it, errors.New("give sku=… (a portal product) or name=…,price=… (a one-time product), not both")
	case !hasProduct && it.SKU == "":
		return it, errors.New("give sku=… (a portal product) or name=…,price=… (a one-time product)")
	case hasProduct:
		it.Product = &p
	}
	return it, nil
}

// linkFlags names the flag of each field of a payment link request, and
// itemKeys the key of --item of each field of a line item.
var (
	linkFlags = map[string]string{
		"amount": "--amount", "orderReference": "--reference", "orderName": "--name",
		"orderDescription": "--description", "successUrl": "--success-url", "cancelUrl": "--cancel-url",
		"locationCode": "--location", "expirationMinutes": "--expiration-minutes", "lineItems": "--item",
	}
	itemKeys = map[string]string{"product.name": "name", "product.price": "price", "product.imageUrl": "image", "quantity": "qty"}
)

// inFlagTerms restates a refused request, ordersync's or the service's,
// with the flags the user typed instead of the API's field names:
// "--item 2 price: The value must be greater than 0." for
// "lineItems[1].product.price". Other errors pass unchanged.
func inFlagTerms(err error) error {
	var ve *ordersync.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) == 0 {
		return err
	}
	lines := make([]string, 0, len(ve.Fields))
	for _, field := range ve.FieldNames() {
		lines = append(lines, "  "+flagOfField(field)+": "+strings.Join(ve.Fields[field], " "))
	}
	return fmt.Errorf("the payment link was refused:\n%s", strings.Join(lines, "\n"))
}

func flagOfField(field string) string {
	if f, ok := linkFlags[field]; ok {
		return f
	}
	var i int
	var rest string
	if n, _ := fmt.Sscanf(field, "lineItems[%d]", &i); n == 1 {
		_, rest, _ = strings.Cut(field, "].")
		name := fmt.Sprintf("--item %d", i+1)
		if rest == "" {
			return name
		}
		if k, ok := itemKeys[rest]; ok {
			return name + " " + k
		}
		return name + " " + rest
	}
	if n, _ := fmt.Sscanf(field, "metadata[%d]", &i); n == 1 {
		return fmt.Sprintf("--metadata %d", i+1)
	}
	return field
}
