// The flow of bench/flow.sh for k6: log in, read the items with the token, post one.
import http from 'k6/http';
import { check } from 'k6';

const BASE = __ENV.TARGET;
const JSON_HEADERS = { headers: { 'Content-Type': 'application/json' } };

export default function () {
  const login = http.post(`${BASE}/login`, JSON.stringify({ user: `user${__VU}`, password: 'secret' }), JSON_HEADERS);
  const token = login.json('token');
  const items = http.get(`${BASE}/items/${token}`);
  check(items, { 'has items': (r) => r.json('items.0.id') !== undefined });
  http.post(`${BASE}/items/${token}`, JSON.stringify({ name: `item ${__ITER}` }), JSON_HEADERS);
}
