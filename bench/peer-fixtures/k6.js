// k6 script for bench/peer-fixtures.sh: 10 requests/s for 20 s (open model), alternating
// /fast and /slow of server.py, each request named by the path (the `name` tag).
import http from 'k6/http';

const base = __ENV.TARGET || 'http://127.0.0.1:18090';

export const options = {
  scenarios: {
    steady: { executor: 'constant-arrival-rate', rate: 10, timeUnit: '1s', duration: '20s', preAllocatedVUs: 10, maxVUs: 20 },
  },
  // Every trend statistic volley can show, plus a custom one (p(75)) it cannot.
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(75)', 'p(90)', 'p(95)', 'p(99)', 'p(99.9)'],
  // Always-true thresholds: they make k6 write these submetrics into the summary.
  thresholds: {
    'http_req_waiting{expected_response:true}': ['max>=0'],
    'http_req_duration{expected_response:true}': ['max>=0'],
  },
};

export default function () {
  const path = __ITER % 2 === 0 ? '/fast' : '/slow';
  http.get(`${base}${path}`, { tags: { name: path } });
}
