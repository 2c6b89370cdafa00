// The demo chat's front end: one user's visit, as a browser makes it. Every id the page
// sends back (the new room's id, the pair room's access code) comes from an earlier
// response. `window.volleyDone` is set when the visit is over (the recorder waits for it).
"use strict";

const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const headers = {};
  // A signed-in user: the token a login page would have stored.
  const token = sessionStorage.getItem("token");
  if (token) headers["Authorization"] = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status}`);
  return res.status === 204 ? null : res.json();
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function visit() {
  const params = new URLSearchParams(location.search);
  if (params.get("token")) sessionStorage.setItem("token", params.get("token"));
  if (params.get("session")) document.cookie = "session=" + params.get("session") + "; path=/";

  const rooms = await api("GET", "/rooms");
  $("room-list").innerHTML = rooms.map((r) => `<li>${r.name} (${r.messages})</li>`).join("");
  await pause(300);

  const room = await api("POST", "/rooms", { name: "recorded room" });
  $("room-title").textContent = "Room " + room.id;
  for (const text of ["hello", "how is the load test going?"]) {
    await pause(250);
    await api("POST", "/api-chat/chat", { roomId: room.id, userId: 7, content: text });
  }
  const page = await api("GET", `/rooms/${room.id}/messages?size=10&page=0`);
  $("messages").innerHTML = page.messages.map((m) => `<li>${m.content}</li>`).join("");
  await pause(400);

  const pair = await api("POST", "/api/pair-room", { driver: "ana", navigator: "ben", timer_duration_ms: 300000 });
  const code = pair.accessCode;
  const state = await api("GET", `/api/pair-room/${code}`);
  $("pair-state").textContent = `${state.driver} drives, ${state.navigator} navigates (${state.status})`;
  await api("POST", `/api/pair-room/${code}/todos`, { content: "write the load test" });
  const todos = await api("GET", `/api/pair-room/${code}/todos`);
  $("todos").innerHTML = todos.map((t) => `<li>${t.content}</li>`).join("");
  await api("PATCH", `/api/pair-room/${code}/timer/start`);
  await pause(200);
  await api("PATCH", `/api/pair-room/${code}/status`, { status: "COMPLETED" });

  // A third-party beacon (another host name), as analytics scripts send.
  const beacon = params.get("beacon");
  if (beacon) await fetch(beacon + "?page=chat", { mode: "no-cors" }).catch(() => {});
  $("status").textContent = "done";
}

visit().then(
  () => { window.volleyDone = "ok"; },
  (e) => { $("status").textContent = String(e); window.volleyDone = String(e); },
);
