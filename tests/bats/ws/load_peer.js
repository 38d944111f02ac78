// SPDX-License-Identifier: MIT
// node-ws as an echo server for vega-load's tests and bench/run-ws-echo.sh: listens on
// 127.0.0.1 (a free port, printed as "listening PORT"), echoes every message, and prints for
// each connection what it negotiated and how it ended, as the server saw them:
//   "open protocol=P extensions=E offered=O x-test=X ua=U file=F" (P, E: "" when none; O, X,
//   U, F: the request's Sec-WebSocket-Protocol, X-Test, User-Agent, X-File), then "closed CODE" (1000: the client's close handshake; 1001:
//   going away; 1005: a Close without a code; 1006: no Close at all).
// usage: node load_peer.js [deflate] [pick=NAME|bogus=NAME] [quiet]
//   deflate: permessage-deflate on, every message compressed (threshold 0)
//   pick=NAME: select subprotocol NAME when offered (none otherwise)
//   bogus=NAME: answer with subprotocol NAME whatever was offered (a broken server)
//   quiet: no per-connection lines (for the bench)
'use strict';
const { WebSocketServer } = require('ws');

const args = process.argv.slice(2);
const deflate = args.includes('deflate');
const quiet = args.includes('quiet');
const pick = (args.find((a) => a.startsWith('pick=')) || '').slice(5);
const bogus = (args.find((a) => a.startsWith('bogus=')) || '').slice(6);

const wss = new WebSocketServer({
  host: '127.0.0.1',
  port: 0,
  maxPayload: 1 << 24,
  perMessageDeflate: deflate ? { threshold: 0 } : false,
  handleProtocols: (protocols) => {
    if (bogus) return bogus;
    return pick && protocols.has(pick) ? pick : false;
  },
});
wss.on('listening', () => console.log('listening', wss.address().port));
wss.on('connection', (ws, req) => {
  if (!quiet) {
    console.log(`open protocol=${ws.protocol} extensions=${ws.extensions} ` +
      `offered=${req.headers['sec-websocket-protocol'] || ''} ` +
      `x-test=${req.headers['x-test'] || ''} ua=${req.headers['user-agent'] || ''} ` +
      `file=${req.headers['x-file'] || ''}`);
  }
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on('close', (code) => { if (!quiet) console.log('closed', code); });
});
