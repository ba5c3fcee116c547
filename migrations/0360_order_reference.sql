-- An import looks for its channel order in the mirror by reference number before it creates the order (src/push/
-- import-order.ts): the service is asked only on a retry. Partial: most orders carry none.
CREATE INDEX orders_reference_number ON orders (connection_id, (raw->>'reference_number'))
  WHERE raw->>'reference_number' IS NOT NULL;
