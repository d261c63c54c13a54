export function NotFound() {
  return (
    <div class="empty">
      <h1>Nothing here</h1>
      <p>
        This address names no page. Go to the <a href="#/pipelines">pipelines</a>.
      </p>
    </div>
  );
}
